// Package readplan is recordsd's compiled read path (docs/design.md D51): a validated GraphQL operation over
// bills is compiled once into a plan that knows the columns each root field needs and how to write each
// selected field, and a request runs the plan by writing JSON straight from PostgreSQL's row values — no
// resolver, field context or marshaller per field. Whatever a plan does not cover (other families,
// introspection, @defer, any error) is left to gqlgen's executor, which stays the reference: a plan's answer
// is byte for byte the executor's (the differential tests in backend/httpapi hold the two together).
package readplan

import (
	"github.com/civicgate/civicgate/backend/store"
	"github.com/vektah/gqlparser/v2/ast"
)

// Plan is an operation compiled for one set of @skip/@include values.
type Plan struct {
	roots []root
	// bills reports a root field of the bills family (bills or bill): what the entitlement check asks.
	bills bool
}

// UsesBills reports whether the plan reads the bills family.
func (p *Plan) UsesBills() bool { return p.bills }

type rootKind uint8

const (
	rootTypename rootKind = iota // {__typename} at the root: "Query"
	rootBills                    // bills(input:): a BillsPage
	rootBill                     // bill(id:): a Bill or null
)

type root struct {
	kind   rootKind
	key    []byte // `"key":`
	field  *ast.Field
	object *objectPlan      // the BillsPage (bills) or the Bill (bill)
	fields store.BillFields // the columns the root's bills need
}

type entryKind uint8

const (
	entryTypename   entryKind = iota // the object's type name
	entryColumn                      // one Bill field
	entryItems                       // BillsPage.items
	entryNextCursor                  // BillsPage.nextCursor
)

// objectPlan writes one object: its entries in response order.
type objectPlan struct {
	entries []entry
}

type entry struct {
	kind     entryKind
	key      []byte // `"key":`
	typeName string // entryTypename
	col      store.BillField
	value    int         // entryColumn: the column's index in a row (set once the root's columns are known)
	nullable bool        // entryColumn: the GraphQL type is nullable
	number   bool        // entryColumn: an Int, written bare
	items    *objectPlan // entryItems: each Bill
}

// billColumns maps Bill's GraphQL fields to the store's columns.
var billColumns = map[string]struct {
	col      store.BillField
	nullable bool
	number   bool
}{
	"id":                  {store.BillID, false, false},
	"congress":            {store.BillCongress, false, true},
	"type":                {store.BillType, false, false},
	"number":              {store.BillNumber, false, true},
	"officialTitle":       {store.BillOfficialTitle, false, false},
	"introducedDate":      {store.BillIntroducedDate, true, false},
	"memberName":          {store.BillMemberName, true, false},
	"memberBioguideId":    {store.BillMemberBioguideID, true, false},
	"memberByCongressKey": {store.BillMemberByCongressKey, true, false},
	"committeeNames":      {store.BillCommitteeNames, false, false},
	"sourceUrl":           {store.BillSourceURL, true, false},
	"lastSyncedAt":        {store.BillLastSyncedAt, false, false},
}

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
			r.object = compilePage(c, f.selections, &r.fields)
			p.bills = true
		case "bill":
			r.kind = rootBill
			r.object = compileBill(c, f.selections, &r.fields)
			p.bills = true
		default:
			return nil
		}
		if r.object != nil {
			r.object.index(r.fields)
		}
		p.roots = append(p.roots, r)
	}
	if !c.ok || len(p.roots) == 0 {
		return nil
	}
	return p
}

func compilePage(c *collector, sel ast.SelectionSet, fields *store.BillFields) *objectPlan {
	o := &objectPlan{}
	for _, f := range c.collect(sel, "BillsPage") {
		e := entry{key: keyJSON(f.field.Alias)}
		switch f.field.Name {
		case "__typename":
			e.kind, e.typeName = entryTypename, "BillsPage"
		case "items":
			e.kind, e.items = entryItems, compileBill(c, f.selections, fields)
		case "nextCursor":
			e.kind = entryNextCursor
		default:
			c.ok = false
		}
		o.entries = append(o.entries, e)
	}
	return o
}

func compileBill(c *collector, sel ast.SelectionSet, fields *store.BillFields) *objectPlan {
	o := &objectPlan{}
	for _, f := range c.collect(sel, "Bill") {
		e := entry{key: keyJSON(f.field.Alias)}
		if f.field.Name == "__typename" {
			e.kind, e.typeName = entryTypename, "Bill"
		} else if bc, ok := billColumns[f.field.Name]; ok {
			e.kind, e.col, e.nullable, e.number = entryColumn, bc.col, bc.nullable, bc.number
			*fields = fields.With(bc.col)
		} else {
			c.ok = false
		}
		o.entries = append(o.entries, e)
	}
	return o
}

// index sets each column entry's position in a row of fields.
func (o *objectPlan) index(fields store.BillFields) {
	for i := range o.entries {
		e := &o.entries[i]
		switch e.kind {
		case entryColumn:
			e.value = fields.Index(e.col)
		case entryItems:
			e.items.index(fields)
		}
	}
}

// keyJSON is a response key as gqlgen writes it, then a colon (GraphQL names need no escaping).
func keyJSON(key string) []byte {
	return []byte(`"` + key + `":`)
}
