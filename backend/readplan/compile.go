// Package readplan is recordsd's compiled read path (docs/design.md D51): a validated GraphQL operation over
// the records families is compiled once into a plan that knows the columns each root field needs and how to
// write each selected field, and a request runs the plan by writing JSON straight from PostgreSQL's row values —
// no resolver, field context or marshaller per field. Whatever a plan does not cover (introspection, @defer, a
// value the store's full-row read cannot scan, any error) is left to gqlgen's executor, which stays the
// reference: a plan's answer is byte for byte the executor's (the differential tests in backend/httpapi hold the
// two together).
package readplan

import (
	"math/bits"

	"github.com/civicgate/civicgate/backend/store"
	"github.com/vektah/gqlparser/v2/ast"
)

// Plan is an operation compiled for one set of @skip/@include values.
type Plan struct {
	roots []root
	// families are the root field names the plan resolves (not __typename): what the entitlement check asks.
	families []string
}

// RootFields lists the Query fields the plan resolves (__typename aside), once each.
func (p *Plan) RootFields() []string { return p.families }

type rootKind uint8

const (
	rootTypename   rootKind = iota // {__typename} at the root: "Query"
	rootBills                      // bills(input:): a BillsPage
	rootBill                       // bill(id:): a Bill or null
	rootMembers                    // members(input:): a MembersPage
	rootBudgets                    // federalBudgets(input:): a FederalBudgetsPage
	rootRegulatory                 // regulatoryFilings(input:): a RegulatoryFilingsPage
	rootLobbying                   // lobbyingDisclosures(input:): a LobbyingDisclosuresPage
)

type root struct {
	kind   rootKind
	key    []byte // `"key":`
	field  *ast.Field
	object *objectPlan // the page (bills, members) or the Bill (bill)
	fields uint32      // the columns the root's items need, a store field set
	nested uint32      // the columns the items' nested list needs (members: terms), a store field set
	// withNested: the items' nested list is selected somewhere (members: terms are read).
	withNested bool
}

type entryKind uint8

const (
	entryTypename   entryKind = iota // the object's type name
	entryColumn                      // one scalar field
	entryItems                       // a page's items
	entryNextCursor                  // a page's nextCursor
	entryNested                      // an item's nested list (Member.terms), from the nested rows
	entryAgencies                    // RegulatoryFiling.agencies, from the row's JSON column
	entryActivities                  // LobbyingDisclosure.activities, from the row's JSON column
)

// objectPlan writes one object: its entries in response order.
type objectPlan struct {
	entries []entry
}

type entry struct {
	kind     entryKind
	key      []byte // `"key":`
	typeName string // entryTypename
	col      uint8
	value    int         // entryColumn: the column's index in a row (set once the root's columns are known)
	nullable bool        // entryColumn: the GraphQL type is nullable
	format   valueFormat // entryColumn: how the value is written
	items    *objectPlan // entryItems, entryNested: each item
}

// valueFormat is how a column's text is written as a GraphQL value.
type valueFormat uint8

const (
	asString  valueFormat = iota // String, ID, enums: a JSON string
	asBare                       // Int, Boolean: the text as it is
	asFloat                      // Float: a decimal's text as gqlgen writes the float64 pgx reads from it
	asStrings                    // [String!]!: a JSON array of a text array's elements
)

// column is a GraphQL field read from one column: the store's field number and how it is written.
type column struct {
	col      uint8
	nullable bool
	format   valueFormat
}

// billColumns maps Bill's GraphQL fields to the store's columns.
var billColumns = map[string]column{
	"id":                  {uint8(store.BillID), false, asString},
	"congress":            {uint8(store.BillCongress), false, asBare},
	"type":                {uint8(store.BillType), false, asString},
	"number":              {uint8(store.BillNumber), false, asBare},
	"officialTitle":       {uint8(store.BillOfficialTitle), false, asString},
	"introducedDate":      {uint8(store.BillIntroducedDate), true, asString},
	"memberName":          {uint8(store.BillMemberName), true, asString},
	"memberBioguideId":    {uint8(store.BillMemberBioguideID), true, asString},
	"memberByCongressKey": {uint8(store.BillMemberByCongressKey), true, asString},
	"committeeNames":      {uint8(store.BillCommitteeNames), false, asString},
	"sourceUrl":           {uint8(store.BillSourceURL), true, asString},
	"lastSyncedAt":        {uint8(store.BillLastSyncedAt), false, asString},
}

// memberColumns and termColumns map Member's and MemberTerm's GraphQL fields to the store's columns.
var (
	memberColumns = map[string]column{
		"member_id":   {uint8(store.MemberID), false, asString},
		"bioguide_id": {uint8(store.MemberBioguideID), false, asString},
		"name":        {uint8(store.MemberName), false, asString},
		"state":       {uint8(store.MemberState), true, asString},
	}
	termColumns = map[string]column{
		"congress": {uint8(store.TermCongress), false, asBare},
		"chamber":  {uint8(store.TermChamber), false, asString},
		"party":    {uint8(store.TermParty), true, asString},
	}
)

// budgetColumns maps FederalBudgetLine's GraphQL fields to the store's columns.
var budgetColumns = map[string]column{
	"id":                         {uint8(store.BudgetID), false, asString},
	"dataset":                    {uint8(store.BudgetDataset), false, asString},
	"fiscal_year":                {uint8(store.BudgetFiscalYear), false, asBare},
	"congress":                   {uint8(store.BudgetCongress), false, asBare},
	"month":                      {uint8(store.BudgetMonth), true, asString},
	"record_date":                {uint8(store.BudgetRecordDate), true, asString},
	"agency_code":                {uint8(store.BudgetAgencyCode), true, asString},
	"agency_name":                {uint8(store.BudgetAgencyName), false, asString},
	"bureau_code":                {uint8(store.BudgetBureauCode), true, asString},
	"bureau_name":                {uint8(store.BudgetBureauName), true, asString},
	"account_code":               {uint8(store.BudgetAccountCode), true, asString},
	"account_title":              {uint8(store.BudgetAccountTitle), false, asString},
	"subfunction_code":           {uint8(store.BudgetSubfunctionCode), true, asString},
	"subfunction_title":          {uint8(store.BudgetSubfunctionTitle), true, asString},
	"bea_category":               {uint8(store.BudgetBeaCategory), true, asString},
	"on_off_budget":              {uint8(store.BudgetOnOffBudget), true, asString},
	"amount":                     {uint8(store.BudgetAmount), true, asFloat},
	"fiscal_year_to_date_amount": {uint8(store.BudgetFiscalYearToDateAmount), true, asFloat},
	"source_url":                 {uint8(store.BudgetSourceURL), true, asString},
	"edition":                    {uint8(store.BudgetEdition), true, asBare},
	"estimate":                   {uint8(store.BudgetEstimate), true, asBare},
	"transition_quarter":         {uint8(store.BudgetTransitionQuarter), false, asBare},
	"last_synced_at":             {uint8(store.BudgetLastSyncedAt), false, asString},
}

// regulatoryColumns maps RegulatoryFiling's GraphQL fields to the store's columns (agencies aside).
var regulatoryColumns = map[string]column{
	"id":                {uint8(store.RegulatoryID), false, asString},
	"document_number":   {uint8(store.RegulatoryDocumentNumber), false, asString},
	"type":              {uint8(store.RegulatoryType), false, asString},
	"subtype":           {uint8(store.RegulatorySubtype), true, asString},
	"title":             {uint8(store.RegulatoryTitle), false, asString},
	"abstract":          {uint8(store.RegulatoryAbstract), true, asString},
	"action":            {uint8(store.RegulatoryAction), true, asString},
	"agency_id":         {uint8(store.RegulatoryAgencyID), true, asString},
	"agency_name":       {uint8(store.RegulatoryAgencyName), true, asString},
	"publication_date":  {uint8(store.RegulatoryPublicationDate), false, asString},
	"filing_year":       {uint8(store.RegulatoryFilingYear), false, asBare},
	"filing_period":     {uint8(store.RegulatoryFilingPeriod), false, asString},
	"correction_of":     {uint8(store.RegulatoryCorrectionOf), true, asString},
	"effective_on":      {uint8(store.RegulatoryEffectiveOn), true, asString},
	"comments_close_on": {uint8(store.RegulatoryCommentsCloseOn), true, asString},
	"rins":              {uint8(store.RegulatoryRins), false, asStrings},
	"docket_ids":        {uint8(store.RegulatoryDocketIDs), false, asStrings},
	"citation":          {uint8(store.RegulatoryCitation), true, asString},
	"significant":       {uint8(store.RegulatorySignificant), true, asBare},
	"html_url":          {uint8(store.RegulatoryHTMLURL), true, asString},
	"pdf_url":           {uint8(store.RegulatoryPdfURL), true, asString},
	"source_url":        {uint8(store.RegulatorySourceURL), true, asString},
	"last_synced_at":    {uint8(store.RegulatoryLastSyncedAt), false, asString},
}

// agencyColumns maps RegulatoryAgency's GraphQL fields to the members of records.RegulatoryAgency (appendAgency).
var agencyColumns = map[string]column{
	"agency_id":        {agencyID, true, asString},
	"name":             {agencyName, false, asString},
	"slug":             {agencySlug, true, asString},
	"parent_agency_id": {agencyParentID, true, asString},
}

// lobbyingColumns maps LobbyingDisclosure's GraphQL fields to the store's columns (activities aside).
var lobbyingColumns = map[string]column{
	"id":                  {uint8(store.LobbyingID), false, asString},
	"filing_type":         {uint8(store.LobbyingFilingType), false, asString},
	"filing_type_display": {uint8(store.LobbyingFilingTypeDisplay), true, asString},
	"filing_year":         {uint8(store.LobbyingFilingYear), false, asBare},
	"filing_period":       {uint8(store.LobbyingFilingPeriod), false, asString},
	"registrant_id":       {uint8(store.LobbyingRegistrantID), false, asString},
	"registrant_name":     {uint8(store.LobbyingRegistrantName), false, asString},
	"client_id":           {uint8(store.LobbyingClientID), false, asString},
	"client_name":         {uint8(store.LobbyingClientName), false, asString},
	"client_description":  {uint8(store.LobbyingClientDescription), true, asString},
	"income":              {uint8(store.LobbyingIncome), true, asFloat},
	"expenses":            {uint8(store.LobbyingExpenses), true, asFloat},
	"posted_at":           {uint8(store.LobbyingPostedAt), true, asString},
	"termination_date":    {uint8(store.LobbyingTerminationDate), true, asString},
	"issue_areas":         {uint8(store.LobbyingIssueAreas), false, asStrings},
	"lobbyist_names":      {uint8(store.LobbyingLobbyistNames), false, asStrings},
	"agencies_acted_on":   {uint8(store.LobbyingAgenciesActedOn), false, asStrings},
	"document_url":        {uint8(store.LobbyingDocumentURL), true, asString},
	"source_url":          {uint8(store.LobbyingSourceURL), true, asString},
	"last_synced_at":      {uint8(store.LobbyingLastSyncedAt), false, asString},
}

// activityColumns and lobbyistColumns map LobbyingActivity's and Lobbyist's GraphQL fields to the members of
// records.LobbyingActivity and records.Lobbyist (appendActivities).
var (
	activityColumns = map[string]column{
		"issue_area":        {activityIssueArea, false, asString},
		"issue_area_name":   {activityIssueAreaName, true, asString},
		"description":       {activityDescription, true, asString},
		"agencies_acted_on": {activityAgenciesActedOn, false, asStrings},
	}
	lobbyistColumns = map[string]column{
		"lobbyist_id":      {lobbyistID, true, asString},
		"name":             {lobbyistName, false, asString},
		"covered_position": {lobbyistCoveredPosition, true, asString},
		"is_new":           {lobbyistIsNew, false, asBare},
	}
)

// compile builds op's plan for the directive values in vars; nil when the operation is not one a plan covers.
func compile(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) *Plan {
	if op.Operation != ast.Query {
		return nil
	}
	c := &collector{doc: doc, vars: vars, ok: true}
	p := &Plan{}
	for _, f := range c.collect(op.SelectionSet, "Query") {
		r := root{key: keyJSON(f.field.Alias), field: f.field}
		switch f.field.Name {
		case "__typename":
			r.kind = rootTypename
		case "bills":
			r.kind = rootBills
			r.object = compilePage(c, f.selections, "BillsPage", func(sel ast.SelectionSet) *objectPlan {
				return compileObject(c, sel, "Bill", billColumns, &r.fields, nil)
			})
		case "bill":
			r.kind = rootBill
			r.object = compileObject(c, f.selections, "Bill", billColumns, &r.fields, nil)
		case "members":
			r.kind = rootMembers
			r.object = compilePage(c, f.selections, "MembersPage", func(sel ast.SelectionSet) *objectPlan {
				return compileObject(c, sel, "Member", memberColumns, &r.fields, map[string]func(ast.SelectionSet) *objectPlan{
					"terms": func(sel ast.SelectionSet) *objectPlan {
						r.withNested = true
						return compileObject(c, sel, "MemberTerm", termColumns, &r.nested, nil)
					},
				})
			})
		case "federalBudgets":
			r.kind = rootBudgets
			r.object = compilePage(c, f.selections, "FederalBudgetsPage", func(sel ast.SelectionSet) *objectPlan {
				return compileObject(c, sel, "FederalBudgetLine", budgetColumns, &r.fields, nil)
			})
		case "regulatoryFilings":
			r.kind = rootRegulatory
			r.object = compilePage(c, f.selections, "RegulatoryFilingsPage", func(sel ast.SelectionSet) *objectPlan {
				return compileRegulatory(c, sel, &r.fields)
			})
		case "lobbyingDisclosures":
			r.kind = rootLobbying
			r.object = compilePage(c, f.selections, "LobbyingDisclosuresPage", func(sel ast.SelectionSet) *objectPlan {
				return compileLobbying(c, sel, &r.fields)
			})
		default:
			return nil
		}
		if r.kind != rootTypename {
			p.families = appendUnique(p.families, f.field.Name)
		}
		if r.object != nil {
			r.object.index(r.fields, r.nested)
		}
		p.roots = append(p.roots, r)
	}
	if !c.ok || len(p.roots) == 0 {
		return nil
	}
	return p
}

// compilePage compiles a page type's selection (items, nextCursor, __typename); items compiles each item.
func compilePage(c *collector, sel ast.SelectionSet, typeName string, items func(ast.SelectionSet) *objectPlan) *objectPlan {
	o := &objectPlan{}
	for _, f := range c.collect(sel, typeName) {
		e := entry{key: keyJSON(f.field.Alias)}
		switch f.field.Name {
		case "__typename":
			e.kind, e.typeName = entryTypename, typeName
		case "items":
			e.kind, e.items = entryItems, items(f.selections)
		case "nextCursor":
			e.kind = entryNextCursor
		default:
			c.ok = false
		}
		o.entries = append(o.entries, e)
	}
	return o
}

// compileObject compiles an object type's selection of columns (added to *fields) and nested lists.
func compileObject(c *collector, sel ast.SelectionSet, typeName string, columns map[string]column, fields *uint32,
	nested map[string]func(ast.SelectionSet) *objectPlan) *objectPlan {
	o := &objectPlan{}
	for _, f := range c.collect(sel, typeName) {
		e := entry{key: keyJSON(f.field.Alias)}
		if f.field.Name == "__typename" {
			e.kind, e.typeName = entryTypename, typeName
		} else if col, ok := columns[f.field.Name]; ok {
			e.kind, e.col, e.nullable, e.format = entryColumn, col.col, col.nullable, col.format
			*fields |= 1 << col.col
		} else if list, ok := nested[f.field.Name]; ok {
			e.kind, e.items = entryNested, list(f.selections)
		} else {
			c.ok = false
		}
		o.entries = append(o.entries, e)
	}
	return o
}

// compileRegulatory compiles a RegulatoryFiling: its columns, and agencies read from the agencies column.
func compileRegulatory(c *collector, sel ast.SelectionSet, fields *uint32) *objectPlan {
	o := compileObject(c, sel, "RegulatoryFiling", regulatoryColumns, fields, map[string]func(ast.SelectionSet) *objectPlan{
		"agencies": func(sel ast.SelectionSet) *objectPlan {
			var none uint32
			return compileObject(c, sel, "RegulatoryAgency", agencyColumns, &none, nil)
		},
	})
	for i := range o.entries {
		if e := &o.entries[i]; e.kind == entryNested {
			e.kind, e.col = entryAgencies, uint8(store.RegulatoryAgencies)
			*fields |= 1 << store.RegulatoryAgencies
		}
	}
	return o
}

// compileLobbying compiles a LobbyingDisclosure: its columns, and activities (with their lobbyists) read from the
// activities column.
func compileLobbying(c *collector, sel ast.SelectionSet, fields *uint32) *objectPlan {
	var none uint32
	o := compileObject(c, sel, "LobbyingDisclosure", lobbyingColumns, fields, map[string]func(ast.SelectionSet) *objectPlan{
		"activities": func(sel ast.SelectionSet) *objectPlan {
			return compileObject(c, sel, "LobbyingActivity", activityColumns, &none, map[string]func(ast.SelectionSet) *objectPlan{
				"lobbyists": func(sel ast.SelectionSet) *objectPlan {
					return compileObject(c, sel, "Lobbyist", lobbyistColumns, &none, nil)
				},
			})
		},
	})
	for i := range o.entries {
		if e := &o.entries[i]; e.kind == entryNested {
			e.kind, e.col = entryActivities, uint8(store.LobbyingActivities)
			*fields |= 1 << store.LobbyingActivities
		}
	}
	return o
}

// index sets each column entry's position in a row of fields (of nested, in a nested list).
func (o *objectPlan) index(fields, nested uint32) {
	for i := range o.entries {
		e := &o.entries[i]
		switch e.kind {
		case entryColumn:
			e.value = bits.OnesCount32(fields & (1<<e.col - 1))
		case entryItems:
			e.items.index(fields, nested)
		case entryNested:
			e.items.index(nested, 0)
		case entryAgencies, entryActivities:
			e.value = bits.OnesCount32(fields & (1<<e.col - 1))
			e.items.indexMembers()
		}
	}
}

// indexMembers sets each column entry's value to its member of the decoded Go value (appendAgencies,
// appendActivities), in nested lists too.
func (o *objectPlan) indexMembers() {
	for i := range o.entries {
		e := &o.entries[i]
		e.value = int(e.col)
		if e.items != nil {
			e.items.indexMembers()
		}
	}
}

// keyJSON is a response key as gqlgen writes it, then a colon (GraphQL names need no escaping).
func keyJSON(key string) []byte {
	return []byte(`"` + key + `":`)
}
