package document

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator/core"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/variables"
)

// Doc is everything the guard needs about one document, computed once and
// cached: either a refusal (a complete HTTP 200 GraphQL error body) or the
// facts of each operation. Nothing in it depends on the request.
type Doc struct {
	// Query is the document's text.
	Query string

	// Refusal, when not nil, is the body the document is refused with;
	// RefusalKind says why.
	Refusal     []byte
	RefusalKind Refusal

	// Tokens is the number of lexical tokens counted (comments excluded);
	// TokenOver the first token over max tokens (nil within the limit).
	Tokens    int
	TokenOver *ast.Position
	// Strings are the decoded string literals (the bearer token search).
	Strings []string
	Ops     []*Operation

	// Trusted: the text is a document of the trusted-documents manifest.
	Trusted bool
	// quoted is the text as a JSON string (set on first use: the body sent
	// upstream for a document resolved by hash).
	quoted atomic.Pointer[[]byte]
}

// Refusal says why a document is refused.
type Refusal uint8

const (
	// RefusedTooManyTokens: over max tokens (not under measure_only).
	RefusedTooManyTokens Refusal = iota + 1
	// RefusedParse: a syntax error.
	RefusedParse
	// RefusedTooComplex: the validation-work safety valve (precheck.go).
	RefusedTooComplex
	// RefusedValidation: validation errors against the schema.
	RefusedValidation
)

// Operation is one operation of a valid document.
type Operation struct {
	Name string
	Kind ast.Operation
	Pos  *ast.Position
	// Variables coerces a request's variables and evaluates the cost.
	Variables *variables.Operation
	Measures  analysis.Measures
	// Families are the families the operation's root fields belong to.
	Families analysis.OperationFamilies
	// Placeholders answers the {graphql.*} placeholders but the cost (built
	// once, so forwarding adds no closure and no replacer map entries).
	Placeholders func(name string) (any, bool)
	// Published is the operation as the guard hands it to later handlers
	// (contract.GraphQLRequest.Operation), built once like the placeholders;
	// its Shape points at shape.
	Published contract.GraphQLOperation
	// Dropped is the number of schema coordinates over
	// analysis.MaxCoordinates, not in Published.Shape (docs/design.md D69).
	Dropped int
	// Deprecation is the response headers of an operation that uses a
	// deprecated coordinate; nil when it uses none (docs/design.md D69).
	Deprecation *DeprecationHeaders

	shape contract.OperationShape

	// Per-request values computed once: the boxed name for
	// {graphql.operation_name}, the root field names for
	// {graphql.root_fields}, the families for {graphql.families}.
	nameVal       any
	kindVal       any
	rootFieldsVal any
	familiesVal   any
	docHashVal    any // {graphql.document_hash}, shared by the document's operations
}

// Config is what compiling depends on: one guard's configuration.
type Config struct {
	Schema *Schema
	// Introspection allows __schema and __type; without it validation
	// messages carry no "Did you mean" suggestions.
	Introspection bool
	MaxTokens     int
	// MeasureOnly: a document over max tokens is parsed anyway (the limit
	// is reported by the shell, not refused here).
	MeasureOnly     bool
	LimitArgument   string
	DefaultListSize int64
	Families        analysis.Families
	// Trusted reports whether a text is a trusted document (nil: none is).
	Trusted func(query string) bool
	// OnParse, when set, is called for every parse (tests: a cache hit
	// parses nothing).
	OnParse func()
	// Deprecation tells what is known of a deprecated schema coordinate:
	// the deprecation headers of the operations that use it (nil: none are
	// sent, docs/design.md D69).
	Deprecation func(coordinate string) Deprecation
	// OnCoordinatesDropped, when set, is told of an operation compiled with
	// coordinates over analysis.MaxCoordinates (the guard counts them).
	OnCoordinatesDropped func(n int)
}

// Compiler turns documents into Docs for one guard configuration.
type Compiler struct {
	schema        *ast.Schema
	rules         []core.Rule
	maxTokens     int
	measureOnly   bool
	limitArg      string
	defaultSize   int64
	families      analysis.Families
	trusted       func(string) bool
	onParse       func()
	introspection bool
	deprecation   func(string) Deprecation
	onDropped     func(int)
}

// NewCompiler returns the compiler of cfg; the validation rules are built
// once here.
func NewCompiler(cfg Config) *Compiler {
	return &Compiler{
		schema:        cfg.Schema.AST,
		rules:         validationRules(cfg.Introspection),
		maxTokens:     cfg.MaxTokens,
		measureOnly:   cfg.MeasureOnly,
		limitArg:      cfg.LimitArgument,
		defaultSize:   cfg.DefaultListSize,
		families:      cfg.Families,
		trusted:       cfg.Trusted,
		onParse:       cfg.OnParse,
		introspection: cfg.Introspection,
		deprecation:   cfg.Deprecation,
		onDropped:     cfg.OnCoordinatesDropped,
	}
}

// Compile lexes, parses and validates query and measures its operations:
// the lexer's token count and string literals, then the parser, the
// validation-work safety valve, gqlparser's validation, and per operation
// the analysis step's measures, its families, its shape and deprecation
// headers (docs/design.md D69) and the variables step's preparation.
func (c *Compiler) Compile(query string) *Doc {
	doc := &Doc{Query: query}
	scan := scanTokens(query, c.maxTokens, !c.measureOnly)
	doc.Tokens, doc.TokenOver, doc.Strings = scan.count, scan.over, scan.strings
	if scan.over != nil && !c.measureOnly {
		doc.Refusal = ErrorBody([]Error{{
			Message:   TooManyTokensMessage(c.maxTokens),
			Locations: LocationsOf(scan.over),
			Code:      CodeTooManyTokens,
		}})
		doc.RefusalKind = RefusedTooManyTokens
		return doc
	}
	if c.onParse != nil {
		c.onParse()
	}
	parsed, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		doc.Refusal = ErrorBody(fromGQLErrors(asList(err), codeParseFailed))
		doc.RefusalKind = RefusedParse
		return doc
	}
	if _, ok := validationWork(parsed, workBudget(doc.Tokens)); !ok {
		// A safety valve for the gateway itself: refused in measure_only too.
		doc.Refusal = ErrorBody([]Error{{
			Message:   msgTooComplexToValidate,
			Locations: []Location{{Line: 1, Column: 1}},
			Code:      codeTooComplexToValidate,
		}})
		doc.RefusalKind = RefusedTooComplex
		return doc
	}
	if errs := validate(c.schema, parsed, c.rules); len(errs) > 0 {
		doc.Refusal = ErrorBody(fromGQLErrors(errs, codeValidationFailed))
		doc.RefusalKind = RefusedValidation
		return doc
	}
	docHash := normalHash(parsed)
	w := analysis.NewWalker(parsed, c.schema, c.limitArg, c.defaultSize)
	for _, op := range parsed.Operations {
		m := w.Measure(op)
		families := c.families.Of(op.Operation, m.RootNames)
		doc.Ops = append(doc.Ops, &Operation{
			Name:          op.Name,
			Kind:          op.Operation,
			Pos:           op.Position,
			Variables:     variables.NewOperation(c.schema, op, m.Cost),
			Measures:      m,
			Families:      families,
			familiesVal:   strings.Join(families.List, ","),
			nameVal:       op.Name,
			kindVal:       string(op.Operation),
			rootFieldsVal: strings.Join(m.RootNames, ","),
			docHashVal:    docHash,
			Published: contract.GraphQLOperation{
				Type: string(op.Operation), Name: op.Name, DocumentHash: docHash, Families: families.List,
			},
		})
	}
	for i, op := range doc.Ops {
		op.Placeholders = op.placeholder
		shape := analysis.OperationShape(parsed, parsed.Operations[i], c.schema)
		op.shape = contract.OperationShape{Coordinates: shape.Coordinates, Deprecated: shape.Deprecated,
			DeprecationReasons: shape.DeprecationReasons, Normalized: shape.Normalized}
		op.Published.Shape = &op.shape
		op.Dropped = shape.Dropped
		if shape.Dropped > 0 && c.onDropped != nil {
			c.onDropped(shape.Dropped)
		}
		op.Deprecation = deprecationHeaders(shape.Deprecated, c.deprecation)
	}
	doc.Trusted = c.trusted != nil && c.trusted(query)
	return doc
}

// normalHash is the hex SHA-256 of the document in normal form: compacted
// by gqlparser's formatter, comments dropped, so documents that differ only
// in white space, commas or comments share it.
func normalHash(doc *ast.QueryDocument) string {
	h := sha256.New()
	formatter.NewFormatter(h, formatter.WithCompacted()).FormatQueryDocument(doc)
	return hex.EncodeToString(h.Sum(nil))
}

// placeholder answers the operation's {graphql.*} placeholders (the cost,
// per request, is set on the replacer).
func (op *Operation) placeholder(name string) (any, bool) {
	switch name {
	case contract.GraphQLOperationName:
		return op.nameVal, true
	case contract.GraphQLOperationType:
		return op.kindVal, true
	case contract.GraphQLRootFields:
		return op.rootFieldsVal, true
	case contract.GraphQLFamilies:
		return op.familiesVal, true
	case contract.GraphQLDocumentHash:
		return op.docHashVal, true
	}
	return nil, false
}

func asList(err error) gqlerror.List {
	var list gqlerror.List
	if errors.As(err, &list) {
		return list
	}
	var one *gqlerror.Error
	if errors.As(err, &one) {
		return gqlerror.List{one}
	}
	return gqlerror.List{gqlerror.Wrap(err)}
}

// msgBlankQuery answers a query that holds no operation at all: empty, or only
// white space, commas and comments (a document that parsed and validated with
// no operation can be nothing else). GraphQL over HTTP: a 400.
const msgBlankQuery = `Request body must contain a non-empty "query" string`

// operationError is a refused operation selection: a 400 whose message is
// shown to the client verbatim.
type operationError struct{ msg string }

func (e *operationError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &operationError{msg: fmt.Sprintf(format, args...)}
}

// Operation selects the operation to run (GraphQL spec GetOperation).
func (d *Doc) Operation(name string) (*Operation, error) {
	if len(d.Ops) == 0 {
		return nil, badRequest(msgBlankQuery)
	}
	if name == "" {
		if len(d.Ops) != 1 {
			return nil, badRequest("Must provide operationName when the document contains several operations")
		}
		return d.Ops[0], nil
	}
	for _, op := range d.Ops {
		if op.Name == name {
			return op, nil
		}
	}
	return nil, badRequest("Unknown operation named %q", name)
}

// OperationBytes is Operation for a name held in bytes.
func (d *Doc) OperationBytes(name []byte) (*Operation, error) {
	if len(d.Ops) == 0 {
		return nil, badRequest(msgBlankQuery)
	}
	if len(name) == 0 {
		return d.Operation("")
	}
	for _, op := range d.Ops {
		if op.Name == string(name) {
			return op, nil
		}
	}
	return d.Operation(string(name))
}

// QuotedQuery is the document's text as a JSON string, encoded once.
func (d *Doc) QuotedQuery() []byte {
	if q := d.quoted.Load(); q != nil {
		return *q
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d.Query) // a string always encodes
	q := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	d.quoted.Store(&q)
	return q
}
