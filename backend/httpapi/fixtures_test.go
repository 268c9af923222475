package httpapi_test

import "fmt"

// seedFixtures inserts a small, hand-written data set where every filter has a record that matches and
// records that do not.
func (e *env) seedFixtures() {
	e.t.Helper()
	// Bills: hr2882-118 and s12-117 differ in every filter; hres5-118 has no introduced date.
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, member_name,
		member_bioguide_id, member_by_congress_key, committee_names, source_url) VALUES
		('hr2882-118', 118, 'hr', 2882, 'Clean Water Infrastructure Resilience Act', '2023-04-25',
		 'Rep. Connolly, Gerald E. [D-VA-11]', 'C001078', 'C001078:118', 'Oversight and Reform Committee',
		 'https://www.congress.gov/bill/118th-congress/house-bill/2882'),
		('s12-117', 117, 's', 12, 'Veterans Health Care Improvement Act', '2021-01-22',
		 'Sen. Baldwin, Tammy [D-WI]', 'B001230', 'B001230:117', 'Veterans'' Affairs Committee', NULL),
		('hres5-118', 118, 'hres', 5, 'Adopting the Rules of the House', NULL, NULL, NULL, NULL, 'Rules Committee', NULL)`)
	// A deleted bill must never appear.
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, committee_names, deleted_at)
		VALUES ('hr9-118', 118, 'hr', 9, 'Clean Water Deleted Act', '2023-05-01', '', now())`)

	e.exec(`INSERT INTO members (member_id, bioguide_id, name, state) VALUES
		('A000370', 'A000370', 'Alma S. Adams', 'NC'),
		('B001230', 'B001230', 'Tammy Baldwin', 'WI'),
		('S000148', 'S000148', 'Charles E. Schumer', 'NY')`)
	e.exec(`INSERT INTO members (member_id, bioguide_id, name, state, deleted_at) VALUES ('Z000001', 'Z000001', 'Zed Deleted', 'NC', now())`)
	e.exec(`INSERT INTO member_terms (member_id, congress, chamber, party, state) VALUES
		('A000370', 117, 'house', 'Democrat', 'NC'), ('A000370', 118, 'house', 'Democrat', 'NC'),
		('B001230', 112, 'house', 'Democrat', 'WI'), ('B001230', 118, 'senate', 'Democrat', 'WI'),
		('S000148', 105, 'house', 'Democrat', 'NY'), ('S000148', 106, 'senate', 'Democrat', 'NY')`)

	e.exec(`INSERT INTO regulatory_filings (id, document_number, type, title, agency_id, agency_name, agencies,
		agency_ids, agency_names, publication_date, filing_year, filing_period, rins, docket_ids, citation) VALUES
		('2026-02822', '2026-02822', 'RULE', 'Air Plan Approval; Ohio', '145', 'Environmental Protection Agency',
		 '[{"agency_id":"145","name":"Environmental Protection Agency","slug":"environmental-protection-agency","parent_agency_id":null}]',
		 '{145}', '{"Environmental Protection Agency"}', '2026-02-12', 2026, 'Q1', '{2060-AV12}', '{EPA-R05-OAR-2024-0123}', '91 FR 6517'),
		('2025-11001', '2025-11001', 'NOTICE', 'Agency Information Collection', '12', 'Agriculture Department',
		 '[{"agency_id":"12","name":"Agriculture Department","slug":"agriculture-department","parent_agency_id":null},{"agency_id":"456","name":"Forest Service","slug":"forest-service","parent_agency_id":"12"}]',
		 '{12,456}', '{"Agriculture Department","Forest Service"}', '2025-06-20', 2025, 'Q2', '{}', '{USDA-2025-0007}', NULL)`)

	e.exec(`INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, month, record_date, agency_code,
		agency_name, bureau_code, bureau_name, account_code, account_title, amount, fiscal_year_to_date_amount) VALUES
		('app-2025-001-05-0100', 'APPROPRIATIONS', 2025, 118, NULL, NULL, '001', 'Legislative Branch', '05', 'Senate', '0100', 'Compensation of Members, Senate', 24000000, NULL),
		('app-2024-007-10-1234', 'APPROPRIATIONS', 2024, 118, NULL, NULL, '007', 'Department of Defense--Military Programs', '10', 'Army', '1234', 'Operation and Maintenance, Army', 5000000, NULL),
		('out-2025-03-justice', 'OUTLAYS', 2025, 118, '2025-03', '2025-03-31', NULL, 'Department of Justice', NULL, NULL, NULL, 'Federal Bureau of Investigation', 812345678.12, 4000000000),
		('out-2026-01-senate', 'OUTLAYS', 2026, 119, '2026-01', '2026-01-31', NULL, 'Legislative Branch', NULL, NULL, NULL, 'Senate', 99000000, 300000000)`)

	e.exec(`INSERT INTO lobbying_disclosures (id, filing_type, filing_type_display, filing_year, filing_period,
		registrant_id, registrant_name, client_id, client_name, income, posted_at, issue_areas, lobbyist_names,
		agencies_acted_on, activities) VALUES
		('1f0c8b6e-0000-4000-8000-000000000001', 'Q1', '1st Quarter - Report', 2025, 'Q1', '401103', 'Akin Gump Strauss Hauer & Feld',
		 '9001', 'Acme Health Systems', 50000, '2025-04-18T14:03:00Z', '{HCR,TAX}', '{"Jane Q. Roe","John Smith"}',
		 '{SENATE,"Health & Human Services, Dept of (HHS)"}',
		 '[{"issue_area":"HCR","issue_area_name":"Health Issues","description":"Medicare reimbursement","agencies_acted_on":["SENATE"],"lobbyists":[{"lobbyist_id":"77","name":"Jane Q. Roe","covered_position":null,"is_new":true}]}]'),
		('1f0c8b6e-0000-4000-8000-000000000002', '2A', '2nd Quarter - Amendment', 2024, 'AMENDMENT', '500200', 'Brownstein Hyatt Farber Schreck',
		 '9002', 'Global Energy Partners', NULL, '2024-08-01T10:00:00Z', '{ENG}', '{"Alex Kim"}',
		 '{"HOUSE OF REPRESENTATIVES"}', '[]')`)
}

func gqlIDsQuery(field, input, idField string) string {
	return fmt.Sprintf(`query($in: %s) { %s(input: $in) { items { %s } nextCursor } }`, input, field, idField)
}
