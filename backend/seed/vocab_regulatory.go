package seed

// frAgency is a Federal Register agency (federalregister.gov /api/v1/agencies): numeric id, name, slug,
// parent, plus the RIN agency code and docket prefix its documents use.
type frAgency struct {
	id, name, slug, parent string
	rin                    string // OMB Unified Agenda agency code (first four RIN digits)
	docket                 string // docket id prefix
}

// frAgencies: real Federal Register agencies (ids as published by the FR API where known, e.g. EPA = 145).
var frAgencies = []frAgency{
	{"145", "Environmental Protection Agency", "environmental-protection-agency", "", "2060", "EPA-HQ-OAR"},
	{"12", "Agriculture Department", "agriculture-department", "", "0503", "USDA"},
	{"22", "Animal and Plant Health Inspection Service", "animal-and-plant-health-inspection-service", "12", "0579", "APHIS"},
	{"54", "Commerce Department", "commerce-department", "", "0605", "DOC"},
	{"361", "National Oceanic and Atmospheric Administration", "national-oceanic-and-atmospheric-administration", "54", "0648", "NOAA-NMFS"},
	{"103", "Defense Department", "defense-department", "", "0790", "DOD"},
	{"126", "Education Department", "education-department", "", "1840", "ED"},
	{"136", "Energy Department", "energy-department", "", "1904", "EERE"},
	{"167", "Federal Energy Regulatory Commission", "federal-energy-regulatory-commission", "136", "1902", "RM"},
	{"221", "Health and Human Services Department", "health-and-human-services-department", "", "0991", "HHS-OS"},
	{"199", "Food and Drug Administration", "food-and-drug-administration", "221", "0910", "FDA"},
	{"45", "Centers for Medicare & Medicaid Services", "centers-for-medicare-medicaid-services", "221", "0938", "CMS"},
	{"227", "Homeland Security Department", "homeland-security-department", "", "1601", "DHS"},
	{"84", "Coast Guard", "coast-guard", "227", "1625", "USCG"},
	{"253", "Interior Department", "interior-department", "", "1090", "DOI"},
	{"197", "Fish and Wildlife Service", "fish-and-wildlife-service", "253", "1018", "FWS-R4-ES"},
	{"268", "Justice Department", "justice-department", "", "1105", "DOJ"},
	{"271", "Labor Department", "labor-department", "", "1290", "DOL"},
	{"400", "Occupational Safety and Health Administration", "occupational-safety-and-health-administration", "271", "1218", "OSHA"},
	{"476", "State Department", "state-department", "", "1400", "DOS"},
	{"492", "Transportation Department", "transportation-department", "", "2105", "DOT-OST"},
	{"159", "Federal Aviation Administration", "federal-aviation-administration", "492", "2120", "FAA"},
	{"367", "National Highway Traffic Safety Administration", "national-highway-traffic-safety-administration", "492", "2127", "NHTSA"},
	{"497", "Treasury Department", "treasury-department", "", "1505", "TREAS-DO"},
	{"254", "Internal Revenue Service", "internal-revenue-service", "497", "1545", "IRS"},
	{"520", "Veterans Affairs Department", "veterans-affairs-department", "", "2900", "VA"},
	{"161", "Federal Communications Commission", "federal-communications-commission", "", "3060", "FCC"},
	{"466", "Securities and Exchange Commission", "securities-and-exchange-commission", "", "3235", "SEC"},
	{"468", "Small Business Administration", "small-business-administration", "", "3245", "SBA"},
	{"228", "Housing and Urban Development Department", "housing-and-urban-development-department", "", "2501", "HUD"},
	{"573", "Consumer Financial Protection Bureau", "consumer-financial-protection-bureau", "", "3170", "CFPB"},
	{"538", "Executive Office of the President", "executive-office-of-the-president", "", "", ""},
}

// presidentAgency is the index of the Executive Office of the President in frAgencies.
const presidentAgency = 31

var frTypes = []struct {
	code   string
	weight int
}{{"NOTICE", 60}, {"RULE", 20}, {"PROPOSED_RULE", 15}, {"PRESIDENTIAL_DOCUMENT", 5}}

var presidentialSubtypes = []string{"Executive Order", "Proclamation", "Memorandum", "Notice", "Determination"}

var ruleActions = map[string][]string{
	"RULE":          {"Final rule.", "Interim final rule.", "Direct final rule.", "Final rule; technical amendment."},
	"PROPOSED_RULE": {"Proposed rule.", "Advance notice of proposed rulemaking.", "Proposed rule; reopening of comment period."},
	"NOTICE":        {"Notice.", "Notice of availability.", "Notice of public meeting.", "Notice of information collection; request for comment."},
}

var regSubjects = []string{
	"Air Plan Approval; Ohio; Ozone Nonattainment", "National Emission Standards for Hazardous Air Pollutants",
	"Airworthiness Directives; The Boeing Company Airplanes", "Medicare Program; Hospital Outpatient Prospective Payment System",
	"Endangered and Threatened Wildlife and Plants; Designation of Critical Habitat", "Fisheries of the Exclusive Economic Zone Off Alaska",
	"Safety Zone; Fireworks Display", "Agency Information Collection Activities; Proposed Collection; Comment Request",
	"Federal Motor Vehicle Safety Standards", "Energy Conservation Program: Energy Conservation Standards for Consumer Products",
	"Pesticide Tolerances", "Special Local Regulations; Marine Events", "Sunshine Act Meetings",
	"Combined Filings", "Importation of Fruits and Vegetables", "Requirements for Foods Intended for Human Consumption",
	"Privacy Act of 1974; System of Records", "Occupational Exposure to Heat", "Schedules of Controlled Substances",
	"Regulations Governing Student Assistance", "Truth in Lending (Regulation Z)", "Prevailing Wage Determinations",
}
