package document

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/internal/intscalar"
)

// Schema is a validated GraphQL schema with the hash that keys the
// document cache, so a changed schema file never reuses old outcomes.
type Schema struct {
	AST  *ast.Schema
	Hash uint64
}

// LoadSchema reads and validates the schema file at path. Its error names the
// file and, for a GraphQL error, the line and column.
func LoadSchema(path string) (*Schema, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading GraphQL schema: %w", err)
	}
	return ParseSchema(path, string(src))
}

// ParseSchema validates the schema src, named name in errors.
func ParseSchema(name, src string) (*Schema, error) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: name, Input: src})
	if err != nil {
		var gqlErr *gqlerror.Error
		if errors.As(err, &gqlErr) && len(gqlErr.Locations) > 0 {
			loc := gqlErr.Locations[0]
			return nil, fmt.Errorf("GraphQL schema %s:%d:%d: %s: %w", name, loc.Line, loc.Column, gqlErr.Message, errInvalidSchema)
		}
		return nil, fmt.Errorf("GraphQL schema %s: %v: %w", name, err, errInvalidSchema)
	}
	if schema.Query == nil {
		return nil, fmt.Errorf("GraphQL schema %s: no Query type: %w", name, errInvalidSchema)
	}
	sum := sha256.Sum256([]byte(src))
	return &Schema{AST: schema, Hash: binary.LittleEndian.Uint64(sum[:8])}, nil
}

var errInvalidSchema = errors.New("invalid schema")

// validationRules returns gqlparser's specified rules, sorted by name as
// gqlparser runs them; without introspection the rules that add "Did you
// mean …" suggestions are swapped for their suggestion-free variants so the
// schema cannot be mapped by probing. The list is built once per handler
// (validator.ValidateWithRules re-sorts its rule map on every call).
func validationRules(introspection bool) []core.Rule {
	inner := ruleSet(introspection).GetInner()
	list := make([]core.Rule, 0, len(inner))
	for name, fn := range inner {
		list = append(list, core.Rule{Name: name, RuleFunc: fn})
	}
	sort.Sort(core.NameSorter(list))
	return list
}

// validate runs the rules over doc and returns every error found.
func validate(schema *ast.Schema, doc *ast.QueryDocument, list []core.Rule) gqlerror.List {
	var errs gqlerror.List
	observers := &core.Events{}
	for _, rule := range list {
		rule.RuleFunc(observers, func(options ...core.ErrorOption) {
			err := &gqlerror.Error{Rule: rule.Name}
			for _, o := range options {
				o(err)
			}
			errs = append(errs, err)
		})
	}
	validator.Walk(schema, doc, observers)
	return errs
}

func ruleSet(introspection bool) *rules.Rules {
	r := rules.NewDefaultRules()
	r.AddRule(intscalar.RuleName, intscalar.Rule.RuleFunc) // Int is 32 bits; gqlparser lets any int64 through
	if introspection {
		return r
	}
	for _, pair := range []struct{ with, without core.Rule }{
		{rules.FieldsOnCorrectTypeRule, rules.FieldsOnCorrectTypeRuleWithoutSuggestions},
		{rules.KnownArgumentNamesRule, rules.KnownArgumentNamesRuleWithoutSuggestions},
		{rules.KnownTypeNamesRule, rules.KnownTypeNamesRuleWithoutSuggestions},
		{rules.ScalarLeafsRule, rules.ScalarLeafsRuleWithoutSuggestions},
		{rules.ValuesOfCorrectTypeRule, rules.ValuesOfCorrectTypeRuleWithoutSuggestions},
	} {
		r.RemoveRule(pair.with.Name)
		r.AddRule(pair.without.Name, pair.without.RuleFunc)
	}
	return r
}
