package gqlguard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator/core"

	"github.com/civicgate/civicgate/modules/gqlguard/analysis"
	"github.com/civicgate/civicgate/modules/gqlguard/variables"
	"github.com/civicgate/civicgate/modules/contract"
)

// compiledDoc is everything the guard needs about one document, computed once
// and cached: either a refusal (a complete HTTP 200 GraphQL error body) or the
// facts of each operation. Nothing in it depends on the request.
type compiledDoc struct {
	query string

	refusal        []byte // non-nil: the document is refused with this body
	refusalOutcome string // metrics outcome of the refusal

	tokens    int
	tokenOver *ast.Position
	strings   []string // decoded string literals (bearer token search)
	ops       []*compiledOp

	// trusted: the text is a document of the trusted-documents manifest.
	trusted bool
	// quoted is the text as a JSON string (set on first use: the body sent
	// upstream for a document resolved by hash).
	quoted atomic.Pointer[[]byte]
}

// compiledOp is one operation of a valid document.
type compiledOp struct {
	name string
	kind ast.Operation
	pos  *ast.Position
	// variables coerces a request's variables and evaluates the cost.
	variables *variables.Operation
	measures  analysis.Measures

	// Per-request values computed once: the boxed name for
	// {graphql.operation_name}, the root field names for
	// {graphql.root_fields}, the families for {graphql.families} (set by
	// the guard that compiled the document).
	nameVal       any
	kindVal       any
	rootFieldsVal any
	familiesVal   any
	docHashVal    any // {graphql.document_hash}, shared by the document's operations
	families      analysis.OperationFamilies
	// provider answers the {graphql.*} placeholders but the cost (built
	// once, so forwarding adds no closure and no replacer map entries).
	provider caddy.ReplacerFunc
}

// compiler turns documents into compiledDocs for one guard configuration.
type compiler struct {
	schema        *ast.Schema
	rules         []core.Rule
	maxTokens     int
	measureOnly   bool
	limitArg      string
	defaultSize   int64
	onParse       func() // test hook: counts parses
	introspection bool
}

func (c *compiler) compile(query string) *compiledDoc {
	doc := &compiledDoc{query: query}
	scan := scanTokens(query, c.maxTokens, !c.measureOnly)
	doc.tokens, doc.tokenOver, doc.strings = scan.count, scan.over, scan.strings
	if scan.over != nil && !c.measureOnly {
		doc.refusal = graphqlErrorBody([]gqlError{{
			Message:   tooManyTokensMessage(c.maxTokens),
			Locations: locationsOf(scan.over),
			Code:      codeTooManyTokens,
		}})
		doc.refusalOutcome = outcomeLimit
		return doc
	}
	if c.onParse != nil {
		c.onParse()
	}
	parsed, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		doc.refusal = graphqlErrorBody(fromGQLErrors(asList(err), codeParseFailed))
		doc.refusalOutcome = outcomeParseFailed
		return doc
	}
	if _, ok := validationWork(parsed, workBudget(doc.tokens)); !ok {
		// A safety valve for the gateway itself: refused in measure_only too.
		doc.refusal = graphqlErrorBody([]gqlError{{
			Message:   msgTooComplexToValidate,
			Locations: []location{{Line: 1, Column: 1}},
			Code:      codeTooComplexToValidate,
		}})
		doc.refusalOutcome = outcomeLimit
		return doc
	}
	if errs := validate(c.schema, parsed, c.rules); len(errs) > 0 {
		doc.refusal = graphqlErrorBody(fromGQLErrors(errs, codeValidationFailed))
		doc.refusalOutcome = outcomeValidationFailed
		return doc
	}
	docHash := normalHash(parsed)
	w := analysis.NewWalker(parsed, c.schema, c.limitArg, c.defaultSize)
	for _, op := range parsed.Operations {
		m := w.Measure(op)
		doc.ops = append(doc.ops, &compiledOp{
			name:          op.Name,
			kind:          op.Operation,
			pos:           op.Position,
			variables:     variables.NewOperation(c.schema, op, m.Cost),
			measures:      m,
			nameVal:       op.Name,
			kindVal:       string(op.Operation),
			rootFieldsVal: strings.Join(m.RootNames, ","),
			docHashVal:    docHash,
		})
	}
	for _, op := range doc.ops {
		op.provider = op.placeholder
	}
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
func (op *compiledOp) placeholder(name string) (any, bool) {
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

// operation selects the operation to run (GraphQL spec GetOperation).
func (d *compiledDoc) operation(name string) (*compiledOp, error) {
	if len(d.ops) == 0 {
		return nil, badRequest(msgBlankQuery)
	}
	if name == "" {
		if len(d.ops) != 1 {
			return nil, badRequest("Must provide operationName when the document contains several operations")
		}
		return d.ops[0], nil
	}
	for _, op := range d.ops {
		if op.name == name {
			return op, nil
		}
	}
	return nil, badRequest("Unknown operation named %q", name)
}

// operationBytes is operation for a name held in bytes.
func (d *compiledDoc) operationBytes(name []byte) (*compiledOp, error) {
	if len(d.ops) == 0 {
		return nil, badRequest(msgBlankQuery)
	}
	if len(name) == 0 {
		return d.operation("")
	}
	for _, op := range d.ops {
		if op.name == string(name) {
			return op, nil
		}
	}
	return d.operation(string(name))
}
