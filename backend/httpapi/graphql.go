package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/civicgate/civicgate/backend/graph"
	"github.com/civicgate/civicgate/backend/readplan"
	"github.com/civicgate/civicgate/internal/intscalar"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// faultKey marks, per request, that execution hit a server fault; the response then becomes a 500.
type faultKey struct{}

func markFault(ctx context.Context) {
	if f, ok := ctx.Value(faultKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// presentError keeps BAD_USER_INPUT errors and marks everything else as a server fault (logged, never sent).
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	if graph.IsUserError(gqlErr) || isDocumentError(gqlErr) {
		return gqlErr
	}
	if isArgumentError(gqlErr) {
		gqlErr.Extensions = map[string]any{"code": graph.CodeBadUserInput}
		return gqlErr
	}
	markFault(ctx)
	s.logFault(ctx, "graphql resolver fault", err, "path", gqlErr.Path.String())
	return &gqlerror.Error{Message: "internal error", Path: gqlErr.Path}
}

func (s *Server) recoverPanic(ctx context.Context, v any) error {
	markFault(ctx)
	s.log.Error("panic in resolver", "panic", panicString(v))
	return errors.New("internal error")
}

func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	media := negotiateMedia(r.Header["Accept"])
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRequestError(w, media, http.StatusMethodNotAllowed, "GraphQL requests must use POST")
		return
	}
	// A body without Content-Type is refused as the gateway refuses it (GraphQL over HTTP: a POST must say
	// its media type; docs/design.md D42).
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil ||
		(mt != "application/json" && mt != "application/graphql-response+json") {
		writeRequestError(w, media, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeRequestError(w, media, http.StatusRequestEntityTooLarge, "Request body too large")
			return
		}
		writeRequestError(w, media, http.StatusBadRequest, "Could not read request body")
		return
	}
	params, msg := decodeGraphQLRequest(body)
	if params == nil {
		writeRequestError(w, media, http.StatusBadRequest, msg)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.QueryTimeout)
	defer cancel()
	fault := new(atomic.Bool)
	ctx = context.WithValue(ctx, faultKey{}, fault)
	var cached *readplan.Entry // the document's compiled entry, already tried for this request
	if s.plans != nil {
		if cached = s.plans.Get(params.Query, params.OperationName); cached != nil && s.serveCached(ctx, w, r, media, cached, params.Variables) {
			return
		}
	}
	ctx = graphql.StartOperationTrace(ctx)
	params.ReadTime = graphql.TraceTiming{Start: graphql.Now(), End: graphql.Now()}

	rc, errs := s.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		if m, ok := requestError(errs); ok {
			writeRequestError(w, media, http.StatusBadRequest, m)
			return
		}
		// Parse and validation errors: 200 with data null for application/json clients (docs/api.md "Errors");
		// a request error without "data", 400, for application/graphql-response+json ones.
		resp := s.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		if media == mediaGraphQLResponse {
			s.writeErrorsOnly(w, resp.Errors)
			return
		}
		s.writeResponse(w, media, resp)
		return
	}
	if err := intscalar.Variables(s.schema, rc.Operation.VariableDefinitions, rc.Variables); err != nil {
		// A variable that does not coerce (docs/api.md "Errors"), answered as requestError answers gqlparser's.
		writeRequestError(w, media, http.StatusBadRequest, err.Message)
		return
	}
	if claims := Claims(r.Context()); claims != nil && !entitledOperation(rc, claims) {
		s.log.Info("refused a root field outside the asserted families", "key_id", claims.KeyID(), "tier", claims.Tier)
		refuseNotEntitled(w)
		return
	}
	if s.plans != nil && cached == nil {
		e := s.plans.Add(params.Query, params.OperationName, rc.Doc, rc.Operation)
		if s.serveCompiled(ctx, w, r, media, e, rc.Variables) {
			return
		}
	}
	s.metrics.executions[executorReference].Inc()
	responses, ctx := s.exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	if fault.Load() || resp == nil {
		writeInternalError(w)
		return
	}
	s.writeResponse(w, media, resp)
}

// msgBlankQuery is the gateway's answer to a query with no operation (empty, or only white space, commas and
// comments), so a client reaching recordsd directly gets the same 400.
const msgBlankQuery = `Request body must contain a non-empty "query" string`

// requestError reports errors that docs/api.md "Errors" answers with 400: a blank query, operationName not in
// the document and variables that do not coerce. gqlgen says "no operation provided" only for a document that
// parsed and validated with no operation at all: a blank one.
func requestError(errs gqlerror.List) (string, bool) {
	for _, e := range errs {
		if len(e.Locations) == 0 && len(e.Path) == 0 && e.Message == "no operation provided" {
			return msgBlankQuery, true
		}
		if len(e.Path) > 0 && e.Path[0] == ast.PathName("variable") {
			return e.Message, true
		}
		if len(e.Locations) == 0 && len(e.Path) == 0 && isOperationNotFound(e.Message) {
			return e.Message, true
		}
	}
	return "", false
}

func isOperationNotFound(msg string) bool {
	return len(msg) > len("operation ") && msg[:len("operation ")] == "operation " &&
		bytes.HasSuffix([]byte(msg), []byte(" not found"))
}

func (s *Server) writeResponse(w http.ResponseWriter, media responseMedia, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		s.log.Error("encode graphql response", "cause", err.Error())
		writeInternalError(w)
		return
	}
	writeGraphQL(w, media, http.StatusOK, b)
}

// writeErrorsOnly answers a request error to an application/graphql-response+json client: 400 and
// {"errors":[…]} with no "data" member, the errors as application/json clients get them.
func (s *Server) writeErrorsOnly(w http.ResponseWriter, errs gqlerror.List) {
	b, err := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
	}{errs})
	if err != nil {
		s.log.Error("encode graphql errors", "cause", err.Error())
		writeInternalError(w)
		return
	}
	writeGraphQL(w, mediaGraphQLResponse, http.StatusBadRequest, b)
}

// writeRequestError answers a request that is not a well-formed GraphQL request (or not one recordsd takes)
// with status and {"errors":[{"message":msg}]} — the body of docs/api.md "Errors" — in the negotiated media type.
func writeRequestError(w http.ResponseWriter, media responseMedia, status int, msg string) {
	writeGraphQL(w, media, status, contract.MessageBodyHTMLEscaped(msg))
}

// isArgumentError reports errors raised while unmarshalling a root field's arguments (path
// [field, argument, …]), e.g. a variable number that is not an integer: client mistakes. Resolver errors
// carry the path [field] only.
// isDocumentError reports a parse or validation error of the request's
// document, which docs/api.md "Errors" answers as it is (200, data null): the client's
// mistake, not a fault.
func isDocumentError(e *gqlerror.Error) bool {
	code, _ := e.Extensions["code"].(string)
	return code == errcode.ValidationFailed || code == errcode.ParseFailed
}

func isArgumentError(e *gqlerror.Error) bool {
	if len(e.Path) < 2 {
		return false
	}
	arg, ok := e.Path[1].(ast.PathName)
	return ok && (arg == "input" || arg == "id")
}
