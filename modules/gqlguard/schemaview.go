package gqlguard

import (
	"errors"

	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/view"
)

// Schema views (docs/design.md D67): with schema_view entitled a caller's
// document is compiled against the part of the schema its families reach.

// The values of schema_view.
const (
	SchemaViewFull     = "full"
	SchemaViewEntitled = "entitled"
)

// checkSchemaView refuses an unknown schema_view, and entitled without a
// family to cut the schema by.
func checkSchemaView(mode string, families int) error {
	switch mode {
	case "", SchemaViewFull:
		return nil
	case SchemaViewEntitled:
		if families == 0 {
			return errors.New("entitled needs at least one family")
		}
		return nil
	}
	return errors.New(`want "full" or "entitled"`)
}

// provisionViews prepares the views, each compiled like the whole schema
// but without "Did you mean" suggestions: a suggestion depends on how near
// a name is to a known one, so with it a field outside the view would not
// answer byte for byte as a made-up name of the same shape.
func (g *Guard) provisionViews(cfg document.Config) (*view.Views, error) {
	return view.NewViews(g.schema, g.fieldFamily, func(s *document.Schema) *document.Compiler {
		c := cfg
		c.Schema = s
		c.Introspection = false // suggestions off; whether __schema passes is selectOperation's
		return document.NewCompiler(c)
	})
}

// viewOf returns the view of a caller owning owned; nil (the whole schema)
// without schema views or when entitlements are not checked.
func (g *Guard) viewOf(owned string, check bool) *view.Compiled {
	if g.views == nil || !check {
		return nil
	}
	return g.views.For(owned)
}
