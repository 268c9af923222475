package tooldef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
)

// Config is what tools are checked against: the guard's schema and its
// families.
type Config struct {
	// Schema is the GraphQL schema graphql_guard validates against.
	Schema *ast.Schema
	// Families maps a family name to root field references, as graphql_guard's
	// `family <name> <rootField…>` lines (Type.field, or a bare name one root
	// type has).
	Families map[string][]string
}

// Tool is one GraphQL operation served as an MCP tool.
type Tool struct {
	// Name is the MCP tool name (ToolName of the operation name).
	Name          string
	OperationName string
	OperationType ast.Operation
	// Family is the one family the operation's root fields belong to.
	Family string
	// Document is the manifest body (the operation and its fragments), byte
	// for byte: sent as it is, it is a trusted document to the guard.
	Document string
	// DocumentID is "sha256:<hex>" of Document.
	DocumentID string
	// MCP is what tools/list shows: name, title, description, schemas
	// (pre-encoded JSON) and annotations. Shared: never modify it.
	MCP *mcp.Tool
	// InputSchema and OutputSchema are the schemas MCP holds encoded.
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema

	families analysis.OperationFamilies
	vars     []inputField
	// The parts of the request body that do not change between calls.
	bodyPrefix []byte // {"query":<Document>,"operationName":<OperationName>,"variables":
}

// Entitled reports whether a caller owning the comma-separated families
// owned may call the tool: the guard's own check (analysis.OperationFamilies).
func (t *Tool) Entitled(owned string) bool { return t.families.Entitled(owned, true) }

// LoadFile reads a manifest file and builds its tools (see Load).
func LoadFile(path string, cfg Config) (*ToolSet, error) {
	entries, err := ReadManifestFile(path)
	if err != nil {
		return nil, err
	}
	set, err := Load(entries, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return set, nil
}

// Load builds the tools of a manifest's entries: every entry that IsTool
// must compile with the guard's compiler (parse, validation against the
// schema, 32-bit Int), name its operation, have the type its entry says,
// belong to exactly one family, and have a tool name no other operation
// has. Entries that are not tools are not checked here (the guard checks
// them as trusted documents). An error names the operation, never its body.
func Load(entries []Entry, cfg Config) (*ToolSet, error) {
	if cfg.Schema == nil {
		return nil, errors.New("tooldef: no GraphQL schema")
	}
	fams, err := analysis.NewFamilies(cfg.Schema, cfg.Families)
	if err != nil {
		return nil, fmt.Errorf("tooldef: families: %w", err)
	}
	compiler := document.NewCompiler(document.Config{
		Schema:      &document.Schema{AST: cfg.Schema},
		MeasureOnly: true, // no token limit: the guard applies its own when the tool is called
		Families:    fams,
	})
	var tools []*Tool
	byName := map[string]*Tool{}
	for i := range entries {
		e := &entries[i]
		if !e.IsTool() {
			continue
		}
		t, err := build(e, cfg.Schema, compiler)
		if err != nil {
			return nil, fmt.Errorf("tooldef: operations[%d] (%s): %w", i, e.who(), err)
		}
		if prev, dup := byName[t.Name]; dup {
			return nil, fmt.Errorf("tooldef: operations[%d] (%s): tool name %q is also the name of operation %q", i, e.who(), t.Name, prev.OperationName)
		}
		byName[t.Name] = t
		tools = append(tools, t)
	}
	return newToolSet(tools)
}

func build(e *Entry, schema *ast.Schema, compiler *document.Compiler) (*Tool, error) {
	doc := compiler.Compile(e.Body)
	if doc.Refusal != nil {
		return nil, fmt.Errorf("the document does not compile against the schema: %s", refusalMessages(doc.Refusal))
	}
	op, err := doc.Operation(e.Name)
	if err != nil {
		return nil, fmt.Errorf("the document: %w", err)
	}
	if string(op.Kind) != e.Type {
		return nil, fmt.Errorf("the operation is a %s, the entry says %s", op.Kind, e.Type)
	}
	switch {
	case op.Families.Orphan:
		return nil, errors.New("a root field of the operation is in no family")
	case len(op.Families.List) != 1:
		return nil, fmt.Errorf("a tool must be in exactly one family; the operation's root fields are in %d (%s)", len(op.Families.List), strings.Join(op.Families.List, ", "))
	}
	name, err := ToolName(e.Name)
	if err != nil {
		return nil, err
	}
	// The compiled document keeps no syntax tree: parse again, with
	// gqlparser's validation filling in the definitions the schemas need.
	parsed, errs := gqlparser.LoadQueryWithRules(schema, e.Body, rules.NewDefaultRules())
	if len(errs) > 0 {
		return nil, fmt.Errorf("the document: %s", errs[0].Message)
	}
	astOp := parsed.Operations.ForName(e.Name)
	if astOp == nil { // the compiler found it
		return nil, fmt.Errorf("the document has no operation %s", e.Name)
	}
	vars, input, err := inputOf(schema, astOp, e.Arguments)
	if err != nil {
		return nil, err
	}
	output, err := outputSchema(schema, parsed, astOp)
	if err != nil {
		return nil, err
	}
	t := &Tool{
		Name:          name,
		OperationName: e.Name,
		OperationType: op.Kind,
		Family:        op.Families.List[0],
		Document:      e.Body,
		DocumentID:    "sha256:" + strings.ToLower(strings.TrimPrefix(e.ID, "sha256:")),
		InputSchema:   input,
		OutputSchema:  output,
		families:      op.Families,
		vars:          vars,
	}
	if t.bodyPrefix, err = bodyPrefix(e.Body, e.Name); err != nil {
		return nil, err
	}
	if t.MCP, err = mcpTool(t, e, schema, astOp); err != nil {
		return nil, err
	}
	return t, nil
}

// inputOf builds the argument checker and the input schema of op's
// variables; described holds the manifest's argument descriptions.
func inputOf(schema *ast.Schema, op *ast.OperationDefinition, described map[string]string) ([]inputField, *jsonschema.Schema, error) {
	for name := range described {
		if op.VariableDefinitions.ForName(name) == nil {
			return nil, nil, fmt.Errorf("\"arguments\" describes %q, which is not a variable of the operation", clip(name))
		}
	}
	bound := boundDescriptions(op)
	b := newInputBuilder(schema)
	s := &jsonschema.Schema{
		Schema:               "https://json-schema.org/draft/2020-12/schema",
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: falseSchema(),
	}
	vars := make([]inputField, 0, len(op.VariableDefinitions))
	for _, v := range op.VariableDefinitions {
		desc := described[v.Variable]
		if desc == "" {
			desc = v.Description
		}
		if desc == "" {
			desc = bound[v.Variable]
		}
		at, ps, err := b.property(v.Type, desc, v.DefaultValue)
		if err != nil {
			return nil, nil, fmt.Errorf("variable $%s: %w", v.Variable, err)
		}
		required := v.Type.NonNull && v.DefaultValue == nil
		vars = append(vars, inputField{name: v.Variable, typ: at, required: required})
		s.Properties[v.Variable] = ps
		s.PropertyOrder = append(s.PropertyOrder, v.Variable)
		if required {
			s.Required = append(s.Required, v.Variable)
		}
	}
	if len(b.defs) > 0 {
		s.Defs = b.defs
	}
	return vars, s, nil
}

// mcpTool is what tools/list shows of t.
func mcpTool(t *Tool, e *Entry, schema *ast.Schema, op *ast.OperationDefinition) (*mcp.Tool, error) {
	in, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	out, err := json.Marshal(t.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	desc := e.Description
	if desc == "" {
		desc = rootFieldDescriptions(schema, op)
	}
	return &mcp.Tool{
		Name:         t.Name,
		Title:        e.Title,
		Description:  desc,
		InputSchema:  json.RawMessage(in),
		OutputSchema: json.RawMessage(out),
		// A query changes nothing; a mutation is left to MCP's defaults
		// (may be destructive, not idempotent).
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:   t.OperationType == ast.Query,
			IdempotentHint: t.OperationType == ast.Query,
		},
	}, nil
}

// rootFieldDescriptions is the schema's description of the operation's
// root fields, each once: a tool's description when the manifest gives none.
func rootFieldDescriptions(schema *ast.Schema, op *ast.OperationDefinition) string {
	root := analysis.RootType(schema, op.Operation)
	var seen []string
	var out string
	for _, s := range op.SelectionSet {
		f, ok := s.(*ast.Field)
		if !ok || root == nil {
			continue
		}
		if fd := root.Fields.ForName(f.Name); fd != nil && fd.Description != "" && !slices.Contains(seen, fd.Description) {
			seen = append(seen, fd.Description)
			out = joinText(out, fd.Description)
		}
	}
	return out
}

// refusalMessages lists the messages of a compiler refusal body
// ({"data":null,"errors":[{"message":…}]}).
func refusalMessages(body []byte) string {
	var r struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) == 0 {
		return "refused"
	}
	msgs := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		msgs[i] = e.Message
	}
	return strings.Join(msgs, "; ")
}

// bodyPrefix encodes the constant start of a call's GraphQL request body.
func bodyPrefix(query, operationName string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`{"query":`)
	if err := enc.Encode(query); err != nil {
		return nil, fmt.Errorf("encoding the document: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteString(`,"operationName":`)
	if err := enc.Encode(operationName); err != nil {
		return nil, fmt.Errorf("encoding the operation name: %w", err)
	}
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`,"variables":`)
	return buf.Bytes(), nil
}
