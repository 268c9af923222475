package readplan

import (
	"context"
	"errors"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/civicgate/civicgate/backend/graph"
	"github.com/civicgate/civicgate/backend/store"
)

var (
	errNullColumn = errors.New("readplan: NULL in a non-null column")
	errBadEntry   = errors.New("readplan: entry of the wrong kind for its object")
	errSplitList  = errors.New("readplan: a nested list's rows are not together")

	// ErrNotCovered is Run's error for a value the reference executor answers with an error of its own (a NaN
	// amount): nothing is written, and the request is the reference executor's.
	ErrNotCovered = errors.New("readplan: a value only the reference executor answers")
)

// RootObserver is called around each root field a plan resolves (bills, bill; not __typename, as gqlgen's
// root field interceptors), with the field's name; the returned context is the field's, and done is called
// with whether the field failed. It is where the caller's metrics and spans go.
type RootObserver func(ctx context.Context, field string) (fieldCtx context.Context, done func(failed bool))

// FaultError is a server fault while running a plan: the root field's response key and the store's error.
type FaultError struct {
	Key string
	Err error
}

func (e *FaultError) Error() string { return "readplan: " + e.Key + ": " + e.Err.Error() }
func (e *FaultError) Unwrap() error { return e.Err }

// Execution is a plan with one request's arguments, checked and ready to run.
type Execution struct {
	plan    *Plan
	bills   []store.BillsQuery   // per root, for bills roots
	ids     []string             // per root, for bill roots
	members []store.MembersQuery // per root, for members roots
	pages   []store.PageQuery    // per root, for other page roots
	arena   rowArena
	nested  nestedRows
	out     []byte
}

var executions = sync.Pool{New: func() any { return new(Execution) }}

// Prepare unmarshals the plan's arguments from vars (the request's coerced variables) with gqlgen's own
// scalar functions and validates them as the store does — without touching the database. ok is false when
// any argument is one gqlgen's executor answers with an error (a value that does not unmarshal, a bad
// cursor, limit or text): such a request is the reference executor's, and no query has been made.
func (p *Plan) Prepare(st *store.Store, vars map[string]any) (x *Execution, ok bool) {
	x = executions.Get().(*Execution)
	x.plan = p
	x.bills = grow(x.bills, len(p.roots))
	x.ids = grow(x.ids, len(p.roots))
	x.members = grow(x.members, len(p.roots))
	x.pages = grow(x.pages, len(p.roots))
	for i := range p.roots {
		r := &p.roots[i]
		switch r.kind {
		case rootBills:
			in, err := graph.DecodeBillsInput(r.field.ArgumentMap(vars)["input"])
			if err != nil {
				x.Release()
				return nil, false
			}
			q, err := st.PrepareBills(in, store.BillFields(r.fields))
			if err != nil {
				x.Release()
				return nil, false
			}
			x.bills[i] = q
		case rootMembers:
			in, err := graph.DecodeMembersInput(r.field.ArgumentMap(vars)["input"])
			if err != nil {
				x.Release()
				return nil, false
			}
			q, err := st.PrepareMembers(in, store.MemberFields(r.fields), r.withNested, store.TermFields(r.nested))
			if err != nil {
				x.Release()
				return nil, false
			}
			x.members[i] = q
		case rootBudgets:
			in, err := graph.DecodeFederalBudgetsInput(r.field.ArgumentMap(vars)["input"])
			if err != nil {
				x.Release()
				return nil, false
			}
			q, err := st.PrepareBudgets(in, store.BudgetFields(r.fields))
			if err != nil {
				x.Release()
				return nil, false
			}
			x.pages[i] = q
		case rootRegulatory:
			in, err := graph.DecodeRegulatoryFilingsInput(r.field.ArgumentMap(vars)["input"])
			if err != nil {
				x.Release()
				return nil, false
			}
			q, err := st.PrepareRegulatory(in, store.RegulatoryFields(r.fields))
			if err != nil {
				x.Release()
				return nil, false
			}
			x.pages[i] = q
		case rootLobbying:
			in, err := graph.DecodeLobbyingDisclosuresInput(r.field.ArgumentMap(vars)["input"])
			if err != nil {
				x.Release()
				return nil, false
			}
			q, err := st.PrepareLobbying(in, store.LobbyingFields(r.fields))
			if err != nil {
				x.Release()
				return nil, false
			}
			x.pages[i] = q
		case rootBill:
			id, err := graphql.UnmarshalID(r.field.ArgumentMap(vars)["id"])
			if err != nil {
				x.Release()
				return nil, false
			}
			x.ids[i] = id
		}
	}
	return x, true
}

func grow[T any](s []T, n int) []T {
	var zero T
	s = s[:0]
	for range n {
		s = append(s, zero)
	}
	return s
}

// Run executes the plan's root fields in order and returns the whole response body, {"data":{…}}, as
// recordsd's gqlgen path writes it. The bytes are the Execution's: valid until Release. An error is a
// *FaultError, or ErrNotCovered.
func (x *Execution) Run(ctx context.Context, st *store.Store, observe RootObserver) ([]byte, error) {
	out := append(x.out[:0], `{"data":{`...)
	for i := range x.plan.roots {
		r := &x.plan.roots[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r.key...)
		var err error
		switch r.kind {
		case rootTypename:
			out = append(out, `"Query"`...)
		case rootBills:
			fctx, done := observe(ctx, "bills")
			var next *string
			next, err = st.RunBills(fctx, x.bills[i], &x.arena)
			done(err != nil)
			if err == nil {
				out, err = r.object.appendPage(out, &x.arena, nil, next)
			}
		case rootMembers:
			fctx, done := observe(ctx, "members")
			var next *string
			next, err = st.RunMembers(fctx, x.members[i], &x.arena, &x.nested)
			done(err != nil)
			if err == nil {
				out, err = r.object.appendPage(out, &x.arena, &x.nested, next)
			}
		case rootBudgets, rootRegulatory, rootLobbying:
			fctx, done := observe(ctx, r.field.Name)
			var next *string
			next, err = st.RunPage(fctx, x.pages[i], &x.arena)
			done(err != nil)
			if err == nil {
				out, err = r.object.appendPage(out, &x.arena, nil, next)
			}
		case rootBill:
			fctx, done := observe(ctx, "bill")
			var found bool
			found, err = st.RunBill(fctx, x.ids[i], store.BillFields(r.fields), &x.arena)
			done(err != nil)
			switch {
			case err != nil:
			case found:
				out, err = r.object.appendObject(out, &x.arena, 0, nil)
			default:
				out = append(out, "null"...)
			}
		}
		if errors.Is(err, store.ErrUnscannable) {
			err = ErrNotCovered
		}
		if errors.Is(err, ErrNotCovered) {
			x.out = out
			return nil, err
		}
		if err != nil {
			x.out = out
			return nil, &FaultError{Key: r.field.Alias, Err: err}
		}
	}
	out = append(out, "}}"...)
	x.out = out
	return out, nil
}

// Release returns x to the pool; its body must no longer be used.
func (x *Execution) Release() {
	x.plan = nil
	clear(x.bills)
	clear(x.members)
	clear(x.pages)
	if cap(x.out) > 1<<20 { // a huge page's buffer is not kept
		x.out = nil
	}
	executions.Put(x)
}
