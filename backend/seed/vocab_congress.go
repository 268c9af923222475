package seed

// Real vocabulary for bills and members (upstream-formats.md: Congress.gov API v3, congress-legislators).

// billTypes are the eight real bill types with weights roughly matching their share of introduced measures.
var billTypes = []struct {
	code   string
	weight int
	house  bool
	slug   string // congress.gov URL segment
}{
	{"hr", 540, true, "house-bill"},
	{"s", 250, false, "senate-bill"},
	{"hres", 80, true, "house-resolution"},
	{"sres", 45, false, "senate-resolution"},
	{"hjres", 30, true, "house-joint-resolution"},
	{"sjres", 20, false, "senate-joint-resolution"},
	{"hconres", 20, true, "house-concurrent-resolution"},
	{"sconres", 15, false, "senate-concurrent-resolution"},
}

// states are the 50 states with their approximate House apportionment (2020 census), then the
// non-voting delegations (one Delegate or Resident Commissioner each, no senators).
var states = []struct {
	code  string
	seats int
}{
	{"AL", 7}, {"AK", 1}, {"AZ", 9}, {"AR", 4}, {"CA", 52}, {"CO", 8}, {"CT", 5}, {"DE", 1}, {"FL", 28}, {"GA", 14},
	{"HI", 2}, {"ID", 2}, {"IL", 17}, {"IN", 9}, {"IA", 4}, {"KS", 4}, {"KY", 6}, {"LA", 6}, {"ME", 2}, {"MD", 8},
	{"MA", 9}, {"MI", 13}, {"MN", 8}, {"MS", 4}, {"MO", 8}, {"MT", 2}, {"NE", 3}, {"NV", 4}, {"NH", 2}, {"NJ", 12},
	{"NM", 3}, {"NY", 26}, {"NC", 14}, {"ND", 1}, {"OH", 15}, {"OK", 5}, {"OR", 6}, {"PA", 17}, {"RI", 2}, {"SC", 7},
	{"SD", 1}, {"TN", 9}, {"TX", 38}, {"UT", 4}, {"VT", 1}, {"VA", 11}, {"WA", 10}, {"WV", 2}, {"WI", 8}, {"WY", 1},
}

// territories send one non-voting member to the House and none to the Senate.
var territories = []string{"DC", "PR", "GU", "VI", "AS", "MP"}

var firstNames = []string{
	"James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William", "Elizabeth",
	"David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen",
	"Christopher", "Nancy", "Daniel", "Lisa", "Matthew", "Betty", "Anthony", "Margaret", "Mark", "Sandra",
	"Donald", "Ashley", "Steven", "Kimberly", "Paul", "Emily", "Andrew", "Donna", "Joshua", "Michelle",
	"Kenneth", "Dorothy", "Kevin", "Carol", "Brian", "Amanda", "George", "Melissa", "Timothy", "Deborah",
	"Ronald", "Stephanie", "Edward", "Rebecca", "Jason", "Sharon", "Jeffrey", "Laura", "Ryan", "Cynthia",
	"Jacob", "Kathleen", "Gary", "Amy", "Nicholas", "Angela", "Eric", "Shirley", "Jonathan", "Anna",
	"Gerald", "Maxine", "Chellie", "Raúl", "Tammy", "Mazie", "Kyrsten", "Rosa", "Jared", "Ilhan",
}

var lastNames = []string{
	"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
	"Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin",
	"Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson",
	"Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores",
	"Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
	"Connolly", "Pingree", "Grijalva", "Duckworth", "Hirono", "Sinema", "DeLauro", "Omar", "Blumenauer", "Kaptur",
	"Underwood", "Valadao", "Stefanik", "Fitzpatrick", "Quigley", "Ocasio-Cortez", "McMorris", "Van Hollen", "O'Rourke", "Yarmuth",
	"Buchanan", "Ellison", "Fairbanks", "Gallagher", "Ibarra", "Kowalski", "Okafor", "Petrakis", "Zeldin", "Whitfield",
}

var middleInitials = []string{"", "", "", "A.", "B.", "C.", "D.", "E.", "F.", "G.", "H.", "J.", "K.", "L.", "M.", "N.", "P.", "R.", "S.", "T.", "W."}

var houseCommittees = []string{
	"Agriculture Committee", "Appropriations Committee", "Armed Services Committee", "Budget Committee",
	"Education and the Workforce Committee", "Energy and Commerce Committee", "Ethics Committee",
	"Financial Services Committee", "Foreign Affairs Committee", "Homeland Security Committee",
	"House Administration Committee", "Judiciary Committee", "Natural Resources Committee",
	"Oversight and Reform Committee", "Rules Committee", "Science, Space, and Technology Committee",
	"Small Business Committee", "Transportation and Infrastructure Committee", "Veterans' Affairs Committee",
	"Ways and Means Committee", "Intelligence (Permanent Select) Committee",
}

var senateCommittees = []string{
	"Agriculture, Nutrition, and Forestry Committee", "Appropriations Committee", "Armed Services Committee",
	"Banking, Housing, and Urban Affairs Committee", "Budget Committee", "Commerce, Science, and Transportation Committee",
	"Energy and Natural Resources Committee", "Environment and Public Works Committee", "Finance Committee",
	"Foreign Relations Committee", "Health, Education, Labor, and Pensions Committee",
	"Homeland Security and Governmental Affairs Committee", "Indian Affairs Committee", "Judiciary Committee",
	"Rules and Administration Committee", "Small Business and Entrepreneurship Committee", "Veterans' Affairs Committee",
	"Intelligence (Select) Committee",
}

// Title vocabulary. Statutes are real U.S. Code titles and Acts; topics are real policy areas. Topics are
// drawn with Zipf-like weights (earlier = more common), so some words are common and some rare.
var statutes = []string{
	"the Internal Revenue Code of 1986", "the Social Security Act", "title 38, United States Code",
	"the Public Health Service Act", "the Higher Education Act of 1965", "the Clean Air Act",
	"the Federal Food, Drug, and Cosmetic Act", "title 10, United States Code", "the Immigration and Nationality Act",
	"the Federal Water Pollution Control Act", "the Elementary and Secondary Education Act of 1965",
	"the Fair Labor Standards Act of 1938", "title 18, United States Code", "the Small Business Act",
	"the Endangered Species Act of 1973", "the Communications Act of 1934", "the Energy Policy Act of 2005",
	"the Securities Exchange Act of 1934", "the Homeland Security Act of 2002", "title 5, United States Code",
	"the Food and Nutrition Act of 2008", "the National Housing Act", "the Federal Power Act",
	"the Outer Continental Shelf Lands Act", "the Controlled Substances Act", "the Magnuson-Stevens Fishery Conservation and Management Act",
}

var topics = []string{
	"health care coverage for veterans", "tax credits for small businesses", "access to mental health services",
	"energy efficiency standards", "student loan forgiveness", "border security and immigration enforcement",
	"prescription drug prices", "broadband deployment in rural areas", "wildfire prevention and forest management",
	"child care affordability", "retirement savings accounts", "cybersecurity of critical infrastructure",
	"water infrastructure financing", "opioid addiction treatment", "affordable housing construction",
	"agricultural conservation programs", "law enforcement training", "election security grants",
	"clean energy tax incentives", "military housing conditions", "highway safety programs",
	"medicare telehealth flexibilities", "apprenticeship and workforce training", "disaster recovery assistance",
	"nuclear waste storage", "consumer data privacy", "pipeline safety", "domestic semiconductor manufacturing",
	"maternal health outcomes", "research on Alzheimer's disease", "tribal land consolidation",
	"port infrastructure improvements", "coastal resilience projects", "antitrust enforcement",
	"the rights of crime victims", "public lands recreation access", "hydrogen fuel development",
	"Great Lakes restoration", "pollinator habitat protection",
	"commemorative coins for national parks", "seismic safety of schools", "quantum computing research",
	// (the rare topics of bills.go are deliberately absent here)
}

var purposes = []string{
	"to improve", "to expand", "to establish a program for", "to provide for", "to modify requirements relating to",
	"to reauthorize programs for", "to strengthen", "to extend the authorization of appropriations for",
	"to prohibit the use of Federal funds for", "to require a study on",
}

var resolutionSubjects = []string{
	"National Nurses Week", "the 250th anniversary of the United States Army", "Black History Month",
	"National Small Business Week", "the victims of the wildfires", "World Autism Awareness Day",
	"National Police Week", "the importance of pollinators", "Women's History Month", "National Farm Safety and Health Week",
}

var cities = []string{
	"Springfield", "Riverside", "Franklin", "Greenville", "Fairview", "Madison", "Georgetown", "Clinton", "Salem", "Arlington",
}
