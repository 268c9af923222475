package seed

// ombAgency is an OMB Public Budget Database agency with some of its real bureaus.
type ombAgency struct {
	code, name string
	bureaus    []ombBureau
}

type ombBureau struct{ code, name string }

var ombAgencies = []ombAgency{
	{"001", "Legislative Branch", []ombBureau{{"05", "Senate"}, {"10", "House of Representatives"}, {"18", "Architect of the Capitol"}, {"25", "Library of Congress"}}},
	{"002", "Judicial Branch", []ombBureau{{"05", "Supreme Court of the United States"}, {"25", "Courts of Appeals, District Courts, and Other Judicial Services"}}},
	{"005", "Department of Agriculture", []ombBureau{{"18", "Agricultural Research Service"}, {"32", "Animal and Plant Health Inspection Service"}, {"84", "Food and Nutrition Service"}, {"96", "Forest Service"}}},
	{"006", "Department of Commerce", []ombBureau{{"07", "Bureau of the Census"}, {"48", "National Oceanic and Atmospheric Administration"}, {"55", "National Institute of Standards and Technology"}}},
	{"007", "Department of Defense--Military Programs", []ombBureau{{"05", "Military Personnel"}, {"10", "Operation and Maintenance"}, {"15", "Procurement"}, {"20", "Research, Development, Test, and Evaluation"}}},
	{"009", "Department of Health and Human Services", []ombBureau{{"10", "Food and Drug Administration"}, {"25", "National Institutes of Health"}, {"38", "Centers for Medicare and Medicaid Services"}, {"39", "Centers for Disease Control and Prevention"}}},
	{"010", "Department of the Interior", []ombBureau{{"04", "Bureau of Land Management"}, {"18", "United States Fish and Wildlife Service"}, {"24", "National Park Service"}, {"76", "Bureau of Indian Affairs"}}},
	{"011", "Department of Justice", []ombBureau{{"10", "Federal Bureau of Investigation"}, {"14", "Drug Enforcement Administration"}, {"20", "Federal Prison System"}}},
	{"012", "Department of Labor", []ombBureau{{"05", "Employment and Training Administration"}, {"18", "Occupational Safety and Health Administration"}}},
	{"014", "Department of State", []ombBureau{{"05", "Administration of Foreign Affairs"}, {"25", "International Organizations and Conferences"}}},
	{"015", "Department of the Treasury", []ombBureau{{"45", "Internal Revenue Service"}, {"12", "Bureau of the Fiscal Service"}}},
	{"016", "Social Security Administration", []ombBureau{{"00", "Social Security Administration"}}},
	{"018", "Department of Education", []ombBureau{{"10", "Office of Elementary and Secondary Education"}, {"45", "Office of Federal Student Aid"}}},
	{"019", "Department of Energy", []ombBureau{{"05", "National Nuclear Security Administration"}, {"10", "Energy Programs"}, {"20", "Environmental and Other Defense Activities"}}},
	{"020", "Environmental Protection Agency", []ombBureau{{"00", "Environmental Protection Agency"}}},
	{"021", "Department of Transportation", []ombBureau{{"12", "Federal Aviation Administration"}, {"15", "Federal Highway Administration"}, {"36", "Federal Transit Administration"}}},
	{"024", "Department of Homeland Security", []ombBureau{{"58", "U.S. Customs and Border Protection"}, {"70", "Federal Emergency Management Agency"}, {"60", "United States Coast Guard"}}},
	{"025", "Department of Housing and Urban Development", []ombBureau{{"03", "Public and Indian Housing Programs"}, {"06", "Community Planning and Development"}}},
	{"026", "National Aeronautics and Space Administration", []ombBureau{{"00", "National Aeronautics and Space Administration"}}},
	{"029", "Department of Veterans Affairs", []ombBureau{{"15", "Veterans Health Administration"}, {"25", "Benefits Programs"}}},
}

var accountStems = []string{
	"Salaries and Expenses", "Operations and Maintenance", "Construction", "Research and Development",
	"Grants to States", "Procurement", "Program Management", "Payments to Trust Funds", "Loan Program Account",
	"Information Technology Systems", "Facilities and Equipment", "Office of Inspector General",
	"Emergency Response Fund", "Science and Technology", "Working Capital Fund", "Compensation and Pensions",
}

var accountQualifiers = []string{
	"", "", "", " (Rescission)", ", Defense", ", Recovery Act", " and Improvements", ", Indefinite",
}

var subfunctions = []struct{ code, title string }{
	{"051", "Department of Defense-Military"}, {"151", "International development and humanitarian assistance"},
	{"251", "General science and basic research"}, {"271", "Energy supply"}, {"304", "Pollution control and abatement"},
	{"351", "Farm income stabilization"}, {"376", "Other advancement of commerce"}, {"401", "Ground transportation"},
	{"402", "Air transportation"}, {"451", "Community development"}, {"501", "Elementary, secondary, and vocational education"},
	{"551", "Health care services"}, {"571", "Medicare"}, {"651", "Social security"}, {"703", "Hospital and medical care for veterans"},
	{"751", "Federal law enforcement activities"}, {"801", "Legislative functions"}, {"803", "Central fiscal operations"},
}

var beaCategories = []string{"Discretionary", "Discretionary", "Mandatory", "Net interest"}

// ldaIssues are the 79 LDA general issue codes with their display names.
var ldaIssues = []struct{ code, name string }{
	{"ACC", "Accounting"}, {"ADV", "Advertising"}, {"AER", "Aerospace"}, {"AGR", "Agriculture"}, {"ALC", "Alcohol and Drug Abuse"},
	{"ANI", "Animals"}, {"APP", "Apparel/Clothing Industry/Textiles"}, {"ART", "Arts/Entertainment"}, {"AUT", "Automotive Industry"},
	{"AVI", "Aviation/Aircraft/Airlines"}, {"BAN", "Banking"}, {"BNK", "Bankruptcy"}, {"BEV", "Beverage Industry"},
	{"BUD", "Budget/Appropriations"}, {"CIV", "Civil Rights/Civil Liberties"}, {"CHM", "Chemicals/Chemical Industry"},
	{"CAW", "Clean Air and Water (Quality)"}, {"CDT", "Commodities (Big Ticket)"}, {"COM", "Communications/Broadcasting/Radio/TV"},
	{"CPI", "Computer Industry"}, {"CON", "Constitution"}, {"CSP", "Consumer Issues/Safety/Protection"}, {"CPT", "Copyright/Patent/Trademark"},
	{"DEF", "Defense"}, {"DIS", "Disaster Planning/Emergencies"}, {"DOC", "District of Columbia"}, {"ECN", "Economics/Economic Development"},
	{"EDU", "Education"}, {"ENG", "Energy/Nuclear"}, {"ENV", "Environmental/Superfund"}, {"FAM", "Family Issues/Abortion/Adoption"},
	{"FIN", "Financial Institutions/Investments/Securities"}, {"FIR", "Firearms/Guns/Ammunition"}, {"FOO", "Food Industry (Safety, Labeling, etc.)"},
	{"FOR", "Foreign Relations"}, {"FUE", "Fuel/Gas/Oil"}, {"GAM", "Gaming/Gambling/Casino"}, {"GOV", "Government Issues"},
	{"HCR", "Health Issues"}, {"HOM", "Homeland Security"}, {"HOU", "Housing"}, {"IMM", "Immigration"}, {"IND", "Indian/Native American Affairs"},
	{"INS", "Insurance"}, {"INT", "Intelligence and Surveillance"}, {"LBR", "Labor Issues/Antitrust/Workplace"}, {"LAW", "Law Enforcement/Crime/Criminal Justice"},
	{"MAN", "Manufacturing"}, {"MAR", "Marine/Maritime/Boating/Fisheries"}, {"MIA", "Media (Information/Publishing)"}, {"MED", "Medical/Disease Research/Clinical Labs"},
	{"MMM", "Medicare/Medicaid"}, {"MON", "Minting/Money/Gold Standard"}, {"NAT", "Natural Resources"}, {"PHA", "Pharmacy"},
	{"POS", "Postal"}, {"RRR", "Railroads"}, {"RES", "Real Estate/Land Use/Conservation"}, {"REL", "Religion"}, {"RET", "Retirement"},
	{"ROD", "Roads/Highway"}, {"SCI", "Science/Technology"}, {"SMB", "Small Business"}, {"SPO", "Sports/Athletics"}, {"TAR", "Miscellaneous Tariff Bills"},
	{"TAX", "Taxation/Internal Revenue Code"}, {"TEC", "Telecommunications"}, {"TOB", "Tobacco"}, {"TOR", "Torts"}, {"TRD", "Trade (Domestic & Foreign)"},
	{"TRA", "Transportation"}, {"TOU", "Travel/Tourism"}, {"TRU", "Trucking/Shipping"}, {"URB", "Urban Development/Municipalities"},
	{"UNM", "Unemployment"}, {"UTI", "Utilities"}, {"VET", "Veterans"}, {"WAS", "Waste (hazardous/solid/interstate/nuclear)"}, {"WEL", "Welfare"},
}

// governmentEntities are LDA "government entities" as the LDA API spells them.
var governmentEntities = []string{
	"SENATE", "HOUSE OF REPRESENTATIVES", "Environmental Protection Agency (EPA)", "Health & Human Services, Dept of (HHS)",
	"Treasury, Dept of", "Defense, Dept of (DOD)", "Energy, Dept of", "Agriculture, Dept of (USDA)", "Commerce, Dept of (DOC)",
	"Transportation, Dept of (DOT)", "Federal Communications Commission (FCC)", "Centers For Medicare and Medicaid Services (CMS)",
	"Food & Drug Administration (FDA)", "White House Office", "Office of Management & Budget (OMB)", "Veterans Affairs, Dept of (VA)",
	"Homeland Security, Dept of (DHS)", "Securities & Exchange Commission (SEC)", "Labor, Dept of (DOL)", "Interior, Dept of (DOI)",
}

var lobbyFirmWords = []string{"Strategies", "Group", "Advocacy", "Public Affairs", "Government Relations", "Partners", "Consulting", "Associates"}

var clientIndustries = []struct{ suffix, description string }{
	{"Health System", "Nonprofit hospital system"}, {"Pharmaceuticals Inc.", "Pharmaceutical manufacturer"},
	{"Energy Corporation", "Electric and natural gas utility"}, {"Farm Bureau", "Agricultural trade association"},
	{"Technologies, Inc.", "Software and cloud services"}, {"Aerospace Company", "Aerospace and defense contractor"},
	{"Credit Union League", "Credit union trade association"}, {"University", "Public research university"},
	{"Tribe", "Federally recognized Indian tribe"}, {"Port Authority", "Municipal port authority"},
	{"Manufacturers Association", "Industry trade association"}, {"Mutual Insurance Company", "Property and casualty insurer"},
	{"Railroad Company", "Freight railroad"}, {"Coalition", "Advocacy coalition"}, {"County", "County government"},
}

var coveredPositions = []string{
	"Legislative Director, Rep. %s", "Chief of Staff, Sen. %s", "Counsel, Senate Finance Committee",
	"Professional Staff Member, House Energy and Commerce Committee", "Deputy Assistant Secretary, Dept of %s",
	"Legislative Assistant, Sen. %s",
}

var activityVerbs = []string{
	"Issues related to", "Monitored legislation regarding", "Advocated for funding for", "Provisions of H.R. %d relating to",
	"Implementation of regulations on", "Appropriations for",
}
