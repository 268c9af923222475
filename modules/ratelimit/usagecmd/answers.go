// Package usagecmd answers "which callers use which operations and schema
// fields" from the usage package's operation tables (docs/design.md D70):
// `civicgate usage operations|fields|coordinate|unused`, and the JSON
// documents the admin API (package usageadmin) serves. It has no Caddy
// module; the answers are the usage package's queries, shaped once here.
package usagecmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Question is one question, as the command line or a URL query asks it.
type Question struct {
	Kind       string        // KindOperations, KindFields, KindDeprecated, KindCoordinate or KindUnused
	Org        string        // operations, fields: organization name or id
	KeyID      string        // operations, fields: only this key
	Coordinate string        // coordinate: "Type.field"
	Schema     []string      // unused: the schema's coordinates (SchemaCoordinates)
	Since      time.Duration // how far back (default DefaultSince)
	Now        time.Time     // zero: now
}

// The kinds of Question.
const (
	KindOperations = "operations"
	KindFields     = "fields"
	KindDeprecated = "deprecated"
	KindCoordinate = "coordinate"
	KindUnused     = "unused"
)

// DefaultSince is a Question's Since when none is given.
const DefaultSince = 24 * time.Hour

// ErrBadQuestion is returned (wrapped) for a question that cannot be
// asked: a usage error on the command line, 400 over the admin API.
var ErrBadQuestion = errors.New("bad question")

// OperationsAnswer is the answer to operations.
type OperationsAnswer struct {
	Org        string      `json:"org"`
	Since      string      `json:"since"`
	Operations []Operation `json:"operations"`
}

// Operation is one key's use of one operation; latencies in milliseconds,
// each the upper bound of its bucket (usage.Latencies.Percentile).
type Operation struct {
	usage.OperationUsage
	P50ms    int64  `json:"p50_ms"`
	P95ms    int64  `json:"p95_ms"`
	LastSeen string `json:"last_seen"`
}

// FieldsAnswer is the answer to fields.
type FieldsAnswer struct {
	Org    string             `json:"org"`
	Since  string             `json:"since"`
	Fields []usage.FieldUsage `json:"fields"`
}

// DeprecatedAnswer is the answer to deprecated: the coordinates the schema
// marks @deprecated that the organization's operations read (the console's
// "Deprecated fields you use", docs/design.md D77).
type DeprecatedAnswer struct {
	Org        string                          `json:"org"`
	Since      string                          `json:"since"`
	Deprecated []usage.DeprecatedCoordinateUse `json:"deprecated"`
}

// CoordinateAnswer is the answer to coordinate.
type CoordinateAnswer struct {
	Coordinate string                 `json:"coordinate"`
	Since      string                 `json:"since"`
	Users      []usage.CoordinateUser `json:"users"`
}

// UnusedAnswer is the answer to unused.
type UnusedAnswer struct {
	Since  string   `json:"since"`
	Schema int      `json:"schema_coordinates"`
	Unused []string `json:"unused"`
}

// Answer asks pool q and returns one of the answers above. Errors are
// ErrBadQuestion, usage.ErrBadQuery and usage.ErrUnknownOrg (wrapped) for
// the asker, anything else a failure.
func Answer(ctx context.Context, pool *pgxpool.Pool, q Question) (any, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	since := q.Since.String()
	args := usage.OperationsArgs{Org: q.Org, KeyID: q.KeyID, Since: q.Since, Now: q.Now}
	switch q.Kind {
	case KindOperations:
		ops, err := usage.Operations(ctx, pool, args)
		if err != nil {
			return nil, err
		}
		a := OperationsAnswer{Org: q.Org, Since: since, Operations: make([]Operation, 0, len(ops))}
		for _, o := range ops {
			a.Operations = append(a.Operations, Operation{OperationUsage: o, P50ms: o.P50.Milliseconds(), P95ms: o.P95.Milliseconds(),
				LastSeen: o.LastSeen.Format(time.RFC3339)})
		}
		return a, nil
	case KindFields:
		fields, err := usage.FieldsOf(ctx, pool, args)
		if err != nil {
			return nil, err
		}
		return FieldsAnswer{Org: q.Org, Since: since, Fields: orEmpty(fields)}, nil
	case KindDeprecated:
		used, err := usage.DeprecatedUse(ctx, pool, q.Org, q.Since, q.Now)
		if err != nil {
			return nil, err
		}
		return DeprecatedAnswer{Org: q.Org, Since: since, Deprecated: orEmpty(used)}, nil
	case KindCoordinate:
		users, err := usage.CoordinateUsers(ctx, pool, q.Coordinate, q.Since, q.Now)
		if err != nil {
			return nil, err
		}
		return CoordinateAnswer{Coordinate: q.Coordinate, Since: since, Users: orEmpty(users)}, nil
	default:
		unused, err := usage.Unused(ctx, pool, q.Schema, q.Since, q.Now)
		if err != nil {
			return nil, err
		}
		return UnusedAnswer{Since: since, Schema: len(q.Schema), Unused: orEmpty(unused)}, nil
	}
}

// Check refuses a question that cannot be asked (ErrBadQuestion), before
// any database is reached; a zero Since becomes DefaultSince.
func (q *Question) Check() error {
	if q.Since == 0 {
		q.Since = DefaultSince
	}
	if q.Since < 0 {
		return fmt.Errorf("%w: since must be positive", ErrBadQuestion)
	}
	switch q.Kind {
	case KindOperations, KindFields, KindDeprecated:
		if q.Org == "" {
			return fmt.Errorf("%w: %s needs an organization (org)", ErrBadQuestion, q.Kind)
		}
		if q.Kind == KindDeprecated && q.KeyID != "" {
			return fmt.Errorf("%w: deprecated takes no key (it answers for the organization)", ErrBadQuestion)
		}
	case KindCoordinate:
		if !validCoordinate(q.Coordinate) {
			return fmt.Errorf("%w: coordinate %q is not Type.field", ErrBadQuestion, q.Coordinate)
		}
	case KindUnused:
		if len(q.Schema) == 0 {
			return fmt.Errorf("%w: unused needs the schema's coordinates", ErrBadQuestion)
		}
	default:
		return fmt.Errorf("%w: %q is not operations, fields, deprecated, coordinate or unused", ErrBadQuestion, q.Kind)
	}
	return nil
}

// orEmpty makes a nil slice an empty one: [] in JSON, not null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// validCoordinate: Type.field, optionally (arg:), as contract.OperationShape
// spells coordinates; names of letters, digits and underscores.
func validCoordinate(c string) bool {
	typ, rest, ok := strings.Cut(c, ".")
	if !ok || !isName(typ) {
		return false
	}
	field, arg, hasArg := strings.Cut(rest, "(")
	if !isName(field) {
		return false
	}
	if hasArg {
		a, ok := strings.CutSuffix(arg, ":)")
		return ok && isName(a)
	}
	return true
}

func isName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ParseSince reads a positive Go duration ("90m", "24h") or whole days
// ("7d"); "" is DefaultSince.
func ParseSince(s string) (time.Duration, error) {
	if s == "" {
		return DefaultSince, nil
	}
	d, ok := clirun.DaysOrDuration(s, 366)
	if !ok || d <= 0 {
		return 0, fmt.Errorf("%w: since %q is not a duration (90m, 24h, 7d)", ErrBadQuestion, s)
	}
	return d, nil
}

// SchemaCoordinates lists the coordinates a schema (SDL) defines, in the
// spelling of contract.OperationShape: "Type.field" for object and
// interface fields, "Type.field(arg:)" for their arguments,
// "Input.field" for input fields and "Enum.VALUE" for enum values; the
// built-in scalars and the introspection types are left out. Sorted.
func SchemaCoordinates(name, sdl string) ([]string, error) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: name, Input: sdl})
	if err != nil {
		return nil, fmt.Errorf("%w: schema %s: %s", ErrBadQuestion, name, err.Error())
	}
	var out []string
	for typeName, def := range schema.Types {
		if def.BuiltIn || strings.HasPrefix(typeName, "__") {
			continue
		}
		switch def.Kind {
		case ast.Object, ast.Interface:
			for _, f := range def.Fields {
				if strings.HasPrefix(f.Name, "__") {
					continue
				}
				out = append(out, typeName+"."+f.Name)
				for _, a := range f.Arguments {
					out = append(out, typeName+"."+f.Name+"("+a.Name+":)")
				}
			}
		case ast.InputObject:
			for _, f := range def.Fields {
				out = append(out, typeName+"."+f.Name)
			}
		case ast.Enum:
			for _, v := range def.EnumValues {
				out = append(out, typeName+"."+v.Name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
