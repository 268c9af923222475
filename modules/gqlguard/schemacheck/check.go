// Package schemacheck tells which recorded operations a candidate schema
// would break, and whose they are: each operation's normalized text (the
// guard's contract.OperationShape.Normalized, recorded by usage) is
// validated against the candidate as graphql_guard would validate it, and
// every operation that no longer validates is reported with gqlparser's
// messages and the keys that sent it (docs/design.md D69). It imports no
// Caddy: `civicgate schema check` (cmd/civicgate) is its command line.
package schemacheck

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// Operation is one recorded operation: its document hash, name and type,
// normalized text and the keys that sent it. The JSON names match Go's
// default encoding of the usage side's record case-insensitively (Hash,
// OrgID …), so its export reads as is.
type Operation struct {
	Hash       string `json:"hash"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	Normalized string `json:"normalized"`
	Keys       []Key  `json:"keys"`
}

// Key is one key's use of an operation.
type Key struct {
	OrgID    string    `json:"orgId"`
	KeyID    string    `json:"keyId"`
	Count    int64     `json:"count"`
	LastSeen time.Time `json:"lastSeen"`
}

// Break is an operation the candidate schema would refuse, and why.
type Break struct {
	Operation Operation `json:"operation"`
	// Errors are the validation messages, each with its line and column
	// in the normalized text ("Cannot query field \"title\" on type
	// \"Book\". (2:3)").
	Errors []string `json:"errors"`
}

// Check validates each operation's normalized text against candidate and
// returns the operations it would refuse, in the order given. An operation
// with no normalized text is reported too: nothing says it still works.
func Check(candidate *ast.Schema, ops []Operation) []Break {
	var out []Break
	for _, op := range ops {
		if op.Normalized == "" {
			out = append(out, Break{Operation: op, Errors: []string{"no normalized text recorded"}})
			continue
		}
		errs := document.Revalidate(candidate, op.Normalized)
		if len(errs) == 0 {
			continue
		}
		b := Break{Operation: op}
		for _, e := range errs {
			msg := e.Message
			if len(e.Locations) > 0 {
				msg = fmt.Sprintf("%s (%d:%d)", msg, e.Locations[0].Line, e.Locations[0].Column)
			}
			b.Errors = append(b.Errors, msg)
		}
		out = append(out, b)
	}
	return out
}

// KeyBreaks is what one key sent that would break.
type KeyBreaks struct {
	OrgID      string     `json:"orgId"`
	KeyID      string     `json:"keyId"`
	Operations []KeyBreak `json:"operations"`
}

// KeyBreak is one operation of a key that would break.
type KeyBreak struct {
	Hash     string    `json:"hash"`
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	Count    int64     `json:"count"`
	LastSeen time.Time `json:"lastSeen"`
	Errors   []string  `json:"errors"`
}

// ByKey regroups breaks per organization and key, sorted by organization
// then key, each key's operations by hash.
func ByKey(breaks []Break) []KeyBreaks {
	type id struct{ org, key string }
	index := map[id]int{}
	var out []KeyBreaks
	for _, b := range breaks {
		for _, k := range b.Operation.Keys {
			i, ok := index[id{k.OrgID, k.KeyID}]
			if !ok {
				i = len(out)
				index[id{k.OrgID, k.KeyID}] = i
				out = append(out, KeyBreaks{OrgID: k.OrgID, KeyID: k.KeyID})
			}
			out[i].Operations = append(out[i].Operations, KeyBreak{
				Hash: b.Operation.Hash, Name: b.Operation.Name, Type: b.Operation.Type,
				Count: k.Count, LastSeen: k.LastSeen, Errors: b.Errors,
			})
		}
	}
	slices.SortFunc(out, func(a, b KeyBreaks) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.KeyID, b.KeyID))
	})
	for _, k := range out {
		slices.SortFunc(k.Operations, func(a, b KeyBreak) int { return cmp.Compare(a.Hash, b.Hash) })
	}
	return out
}
