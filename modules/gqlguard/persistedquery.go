package gqlguard

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/modules/gqlguard/document"
	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
	"github.com/civicgate/civicgate/modules/gqlguard/request"
)

// Persisted documents (docs/design.md D23): Apollo's Automatic Persisted
// Queries (extensions.persistedQuery, registered at run time in memory or
// Redis) and trusted documents (a manifest, by hash or by the GraphQL over
// HTTP documentId). A document found by hash goes through every check, and
// the upstream receives its full text.

const (
	resolvedByAPQ      = "apq"
	resolvedByManifest = "manifest"

	defaultAPQEntries = 10_000
	defaultAPQBytes   = 16 << 20
	defaultAPQPrefix  = "civicgate:"
	defaultAPQTTL     = 24 * time.Hour
)

var (
	bodyPersistedNotFound     = []byte(`{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`)
	bodyPersistedNotSupported = []byte(`{"errors":[{"message":"PersistedQueryNotSupported","extensions":{"code":"PERSISTED_QUERY_NOT_SUPPORTED"}}]}`)
	bodyPersistedMismatch     = []byte(`{"errors":[{"message":"provided sha does not match query","extensions":{"code":"PERSISTED_QUERY_HASH_MISMATCH"}}]}`)
	bodyPersistedVersion      = []byte(`{"errors":[{"message":"Unsupported persisted query version","extensions":{"code":"PERSISTED_QUERY_VERSION_NOT_SUPPORTED"}}]}`)
	bodyDocumentIDAndQuery    = []byte(`{"errors":[{"message":"Request must not contain both \"query\" and \"documentId\"","extensions":{"code":"BAD_REQUEST"}}]}`)
	bodyDocumentsNotEnabled   = []byte(`{"errors":[{"message":"Persisted documents are not enabled on this endpoint","extensions":{"code":"PERSISTED_QUERY_NOT_SUPPORTED"}}]}`)
)

// provisionPersisted opens the APQ store and loads the trusted documents.
func (g *Guard) provisionPersisted(ctx caddy.Context) error {
	if path := g.TrustedDocuments; path != "" {
		m, err := persisted.LoadManifest(caddy.NewReplacer().ReplaceKnown(path, ""))
		if err != nil {
			return fmt.Errorf("trusted_documents: %w", err)
		}
		g.manifest = m
	} else if len(g.TrustedOnly) > 0 {
		return fmt.Errorf("trusted_only needs trusted_documents")
	}
	c := g.PersistedQueries
	if c == nil {
		return nil
	}
	front := persisted.NewMemory(cmp.Or(c.MaxEntries, defaultAPQEntries), cmp.Or(c.MaxBytes, defaultAPQBytes))
	if c.Config.IsZero() {
		g.apq = front
		return nil
	}
	// every failed Redis call is counted by cause and logged, rate-limited,
	// by the client (persisted.WithReporter): not logged again here
	rep, err := redisconn.NewReporter(persisted.ReporterComponent, ctx.GetMetricsRegistry(), g.logger)
	if err != nil {
		return fmt.Errorf("persisted_queries: metrics: %w", err)
	}
	client, release, err := persisted.RedisClientFor(c.Config, persisted.WithReporter(rep))
	if err != nil {
		return fmt.Errorf("persisted_queries: %w", err)
	}
	g.releaseRedis = release
	prefix := c.KeyPrefix
	if prefix == "" {
		prefix = defaultAPQPrefix
	}
	ttl := time.Duration(c.TTL)
	if ttl == 0 {
		ttl = defaultAPQTTL
	}
	g.apq = persisted.NewRedis(client, prefix, ttl, front)
	return nil
}

// apqRegistration is an APQ hash a request sent with its query: the
// document is registered under it once it compiles (registerPersisted).
type apqRegistration struct {
	hash    persisted.Hash
	pending bool
}

// resolvePersisted settles a request that names its document by hash or id:
// the text is looked up (manifest first, then the APQ store), a hash sent
// with its text is verified (and returned for registration). It returns
// the refusal's outcome, or "" to go on.
func (g *Guard) resolvePersisted(w http.ResponseWriter, scope *requestScope, req *request.Located) (apqRegistration, string) {
	var reg apqRegistration
	ext, docID := req.Extensions(), req.DocumentID()
	if docID != "" {
		if g.manifest == nil {
			writeJSON(w, http.StatusBadRequest, bodyDocumentsNotEnabled)
			return reg, outcomeBadRequest
		}
		if req.HasQuery() {
			writeJSON(w, http.StatusBadRequest, bodyDocumentIDAndQuery)
			return reg, outcomeBadRequest
		}
		text, ok := g.manifest.ByID(docID)
		if !ok {
			writeJSON(w, http.StatusOK, bodyPersistedNotFound)
			return reg, outcomePersistedMissing
		}
		req.Resolve(text, resolvedByManifest, true)
		return reg, ""
	}
	rawHash, version, ok := request.PersistedHash(ext)
	if !ok {
		return reg, ""
	}
	if string(version) != "1" {
		writeJSON(w, http.StatusBadRequest, bodyPersistedVersion)
		return reg, outcomeBadRequest
	}
	var h persisted.Hash
	if len(rawHash) != 2*len(h) {
		writeJSON(w, http.StatusBadRequest, bodyPersistedMismatch)
		return reg, outcomeBadRequest
	}
	if _, err := hex.Decode(h[:], rawHash); err != nil {
		writeJSON(w, http.StatusBadRequest, bodyPersistedMismatch)
		return reg, outcomeBadRequest
	}
	if req.HasQuery() {
		if req.QueryHash() != h {
			writeJSON(w, http.StatusBadRequest, bodyPersistedMismatch)
			return reg, outcomeBadRequest
		}
		return apqRegistration{hash: h, pending: g.apq != nil}, ""
	}
	if g.manifest != nil {
		if text, ok := g.manifest.ByHash(h); ok {
			req.Resolve(text, resolvedByManifest, false)
			return reg, ""
		}
	}
	if g.apq == nil {
		writeJSON(w, http.StatusOK, bodyPersistedNotSupported)
		return reg, outcomePersistedMissing
	}
	// A store error is a miss: the client sends the text again on
	// PersistedQueryNotFound, so an outage costs a round trip, not the
	// request. A failed Redis call is counted and logged (rate-limited) by
	// the client's Reporter; a stored text that does not hash to its key is
	// not a Redis failure: logged here.
	text, ok, err := g.apq.Get(scope.ctx, h)
	if errors.Is(err, persisted.ErrCorruptEntry) {
		g.logger.Warn("persisted query store holds a document that does not hash to its key", zap.Error(err))
	}
	if !ok {
		writeJSON(w, http.StatusOK, bodyPersistedNotFound)
		return reg, outcomePersistedMissing
	}
	req.Resolve(text, resolvedByAPQ, false)
	return reg, ""
}

// registerPersisted stores a verified APQ registration whose document
// compiled without refusal (a flood of invalid documents registers nothing).
func (g *Guard) registerPersisted(scope *requestScope, reg apqRegistration, doc *document.Doc) {
	if !reg.pending || doc.Refusal != nil {
		return
	}
	// a failed Redis call is counted and logged by the client's Reporter
	// (the document is in this gateway's memory anyway)
	if err := g.apq.Put(scope.ctx, reg.hash, doc.Query); errors.Is(err, persisted.ErrTooLarge) {
		g.logger.Warn("persisted query store registration failed", zap.Error(err))
	}
}

// checkTrusted refuses a document that is not in the trusted-documents
// manifest when the caller's tier may send only trusted documents.
func (g *Guard) checkTrusted(w http.ResponseWriter, scope *requestScope, doc *document.Doc, req *request.Located) string {
	if len(g.TrustedOnly) == 0 || doc.Trusted || req.ResolvedBy() == resolvedByManifest {
		return ""
	}
	if g.TrustedOnly[0] != "*" && !slices.Contains(g.TrustedOnly, scope.tier) {
		return ""
	}
	writeJSON(w, http.StatusOK, document.ErrorBody([]document.Error{{Message: msgTrustedDocumentsOnly, Code: codeTrustedDocumentNeeded}}))
	return outcomeUntrusted
}

// forwardBody is the body the upstream receives for a request whose document
// was resolved by hash or id: the document's text added as "query", and a
// documentId replaced by it (an upstream that knows documentId refuses a
// body with both, as the guard does).
func forwardBody(body []byte, req *request.Located, doc *document.Doc) []byte {
	if !req.ByDocumentID() {
		return withQuery(body, doc)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return withQuery(body, doc)
	}
	delete(members, "documentId")
	members["query"] = doc.QuotedQuery()
	out, err := json.Marshal(members)
	if err != nil {
		return withQuery(body, doc)
	}
	return out
}

// withQuery returns body (a JSON object without a "query" member) with the
// document's text added as its first member.
func withQuery(body []byte, doc *document.Doc) []byte {
	quoted := doc.QuotedQuery()
	i := bytes.IndexByte(body, '{')
	rest := body[i+1:]
	out := make([]byte, 0, len(body)+len(quoted)+10)
	out = append(out, body[:i+1]...)
	out = append(out, `"query":`...)
	out = append(out, quoted...)
	if len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
