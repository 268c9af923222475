package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Defaults of the civic_webhooks handler.
const (
	DefaultPrefix       = "/v1"
	DefaultOrg          = "{civic.org}"
	DefaultFamilies     = "{civic.families}"
	DefaultMaxReplay    = 10_000
	DefaultMaxEndpoints = 20
	DefaultLimit        = 25
	MaxLimit            = 100
	maxBody             = 64 << 10
	dbTimeout           = 10 * time.Second
)

// Handler serves the change feed and the webhook-endpoint API (DESIGN.md
// §3.8) under Prefix: GET {prefix}/changes and {prefix}/webhook-endpoints….
// It is terminal (never calls next) and needs the caller's organization and
// families, which civic_auth publishes.
type Handler struct {
	// Prefix the API paths live under (default "/v1").
	Prefix string `json:"prefix,omitempty"`
	// Org is the caller's organization id (default "{civic.org}").
	Org string `json:"org,omitempty"`
	// Families are the caller's entitled families, comma-separated (default
	// "{civic.families}").
	Families string `json:"families,omitempty"`
	// MaxReplay bounds the events one replay request schedules (default 10000).
	MaxReplay int `json:"max_replay,omitempty"`
	// MaxEndpoints bounds the endpoints of one organization (default 20).
	MaxEndpoints int `json:"max_endpoints,omitempty"`

	app    *App
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.civic_webhooks", New: func() caddy.Module { return new(Handler) }}
}

// Provision finds the civic_webhooks app.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.Prefix == "" {
		h.Prefix = DefaultPrefix
	}
	h.Prefix = strings.TrimSuffix(h.Prefix, "/")
	if h.Prefix != "" && !strings.HasPrefix(h.Prefix, "/") {
		return fmt.Errorf("civic_webhooks: prefix %q must start with /", h.Prefix)
	}
	if h.Org == "" {
		h.Org = DefaultOrg
	}
	if h.Families == "" {
		h.Families = DefaultFamilies
	}
	if h.MaxReplay <= 0 {
		h.MaxReplay = DefaultMaxReplay
	}
	if h.MaxEndpoints <= 0 {
		h.MaxEndpoints = DefaultMaxEndpoints
	}
	app, err := ctx.AppIfConfigured("civic_webhooks")
	if err != nil {
		return fmt.Errorf("civic_webhooks: the civic_webhooks global option (app) must be configured: %w", err)
	}
	h.app = app.(*App)
	return nil
}

// Client-facing bodies (DESIGN.md §3.6).
var (
	bodyNotFound    = []byte(`{"error":"Not Found"}`)
	bodyNotAllowed  = []byte(`{"error":"Method Not Allowed"}`)
	bodyNotEntitled = []byte(`{"error":"Tier not entitled to this endpoint family"}`)
	bodyInternal    = []byte(`{"error":"Internal Server Error"}`)
	bodyTooLarge    = []byte(`{"errors":[{"message":"Request body too large"}]}`)
)

func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return writeRaw(w, http.StatusInternalServerError, bodyInternal)
	}
	return writeRaw(w, status, b)
}

// badRequest answers 400 in the errors-array form.
func badRequest(w http.ResponseWriter, msg string) error {
	type m struct {
		Message string `json:"message"`
	}
	return writeJSON(w, http.StatusBadRequest, struct {
		Errors []m `json:"errors"`
	}{[]m{{msg}}})
}

func notAllowed(w http.ResponseWriter, allow string) error {
	w.Header().Set("Allow", allow)
	return writeRaw(w, http.StatusMethodNotAllowed, bodyNotAllowed)
}

// internal logs err (never a secret: store errors carry no DSN or secret) and
// answers 500.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, err error) error {
	h.logger.Error("webhooks API failed", zap.String("path", r.URL.Path), zap.Error(err))
	return writeRaw(w, http.StatusInternalServerError, bodyInternal)
}

// caller is who is asking, from civic_auth's placeholders.
type caller struct {
	org      string
	families []string // change-event families the tier owns
	all      map[string]bool
}

func (h *Handler) caller(r *http.Request) (caller, bool) {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		return caller{}, false
	}
	c := caller{org: strings.TrimSpace(repl.ReplaceAll(h.Org, "")), all: map[string]bool{}}
	for _, f := range strings.Split(repl.ReplaceAll(h.Families, ""), ",") {
		if f = strings.TrimSpace(f); f != "" {
			c.all[f] = true
		}
	}
	for _, f := range store.Families() {
		if c.all[f] {
			c.families = append(c.families, f)
		}
	}
	return c, c.org != ""
}

// ServeHTTP implements caddyhttp.MiddlewareHandler (terminal).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	rest, ok := strings.CutPrefix(r.URL.Path, h.Prefix)
	if !ok {
		return writeRaw(w, http.StatusNotFound, bodyNotFound)
	}
	c, ok := h.caller(r)
	if !ok {
		h.logger.Error("no organization for the webhooks API: put civic_auth in front of civic_webhooks (or set org)")
		return writeRaw(w, http.StatusInternalServerError, bodyInternal)
	}
	ctx, cancel := context.WithTimeout(r.Context(), dbTimeout)
	defer cancel()
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "/changes":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return notAllowed(w, "GET")
		}
		return h.changes(ctx, w, r, c)
	case rest == "/webhook-endpoints" || rest == "/webhook-endpoints/":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			return h.list(ctx, w, r, c)
		case http.MethodPost:
			return h.create(ctx, w, r, c)
		}
		return notAllowed(w, "GET, POST")
	case len(segs) == 2 && segs[0] == "webhook-endpoints" && segs[1] != "":
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			return h.get(ctx, w, r, c, segs[1])
		case http.MethodDelete:
			return h.delete(ctx, w, r, c, segs[1])
		}
		return notAllowed(w, "GET, DELETE")
	case len(segs) == 3 && segs[0] == "webhook-endpoints" && segs[1] != "":
		id := segs[1]
		switch segs[2] {
		case "deliveries":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				return notAllowed(w, "GET")
			}
			return h.deliveries(ctx, w, r, c, id)
		case "rotate-secret", "replay", "test":
			if r.Method != http.MethodPost {
				return notAllowed(w, "POST")
			}
			switch segs[2] {
			case "rotate-secret":
				return h.rotate(ctx, w, r, c, id)
			case "replay":
				return h.replay(ctx, w, r, c, id)
			}
			return h.test(ctx, w, r, c, id)
		}
	}
	return writeRaw(w, http.StatusNotFound, bodyNotFound)
}

// parseLimit reads limit (1..100, default 25): never clamped.
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, errors.New("limit must be an integer from 1 to 100")
	}
	return n, nil
}

// families resolves a requested family list (nil = every family the tier
// owns). It answers the refusal itself when it returns ok=false.
func familiesFor(w http.ResponseWriter, c caller, requested []string) ([]string, bool) {
	if requested == nil {
		if len(c.families) == 0 {
			_ = writeRaw(w, http.StatusForbidden, bodyNotEntitled)
			return nil, false
		}
		return c.families, true
	}
	seen := map[string]bool{}
	out := []string{}
	for _, f := range requested {
		if !store.IsFamily(f) {
			_ = badRequest(w, fmt.Sprintf("unknown family %q (families: %s)", f, strings.Join(store.Families(), ", ")))
			return nil, false
		}
		if !c.all[f] {
			_ = writeRaw(w, http.StatusForbidden, bodyNotEntitled)
			return nil, false
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		_ = badRequest(w, "families must not be empty")
		return nil, false
	}
	return out, true
}

type page struct {
	Items      any     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

func (h *Handler) changes(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest(w, "malformed query string")
	}
	for k := range q {
		if k != "after" && k != "limit" && k != "families" {
			return badRequest(w, fmt.Sprintf("unknown parameter %q", k))
		}
	}
	limit, err := parseLimit(q)
	if err != nil {
		return badRequest(w, err.Error())
	}
	after, err := store.DecodeCursor(q.Get("after"))
	if err != nil {
		return badRequest(w, "after is not a cursor of this feed")
	}
	var requested []string
	if q.Has("families") {
		requested = []string{}
		for _, f := range strings.Split(q.Get("families"), ",") {
			if f = strings.TrimSpace(f); f != "" {
				requested = append(requested, f)
			}
		}
	}
	fams, ok := familiesFor(w, c, requested)
	if !ok {
		return nil
	}
	evs, more, err := h.app.store.Changes(ctx, after, fams, limit)
	if err != nil {
		return h.internal(w, r, err)
	}
	items := make([]store.Envelope, 0, len(evs))
	for _, e := range evs {
		items = append(items, e.Envelope())
	}
	var next *string
	if more {
		next = items[len(items)-1].Cursor
	}
	return writeJSON(w, http.StatusOK, page{Items: items, NextCursor: next})
}

// decodeBody reads a JSON object body into v (unknown members refused). An
// empty body is allowed when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		_ = badRequest(w, "cannot read the request body")
		return false
	}
	if len(body) > maxBody {
		_ = writeRaw(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 && emptyOK {
		return true
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			_ = writeJSON(w, http.StatusUnsupportedMediaType, map[string]any{"errors": []map[string]string{{"message": "Content-Type must be application/json"}}})
			return false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		_ = badRequest(w, "request body is not the expected JSON object: "+jsonProblem(err))
		return false
	}
	if dec.More() {
		_ = badRequest(w, "request body has trailing data")
		return false
	}
	return true
}

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s", te.Field, te.Type.String())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "malformed JSON"
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown member " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return "malformed JSON"
}

type createRequest struct {
	URL         string    `json:"url"`
	Families    *[]string `json:"families"`
	Description string    `json:"description"`
}

type createdEndpoint struct {
	store.Endpoint
	Secret string `json:"secret"`
}

func (h *Handler) create(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller) error {
	var req createRequest
	if !decodeBody(w, r, &req, false) {
		return nil
	}
	if req.URL == "" {
		return badRequest(w, "url is required")
	}
	if _, err := h.app.policy.CheckURL(req.URL); err != nil {
		return badRequest(w, "url: "+strings.TrimPrefix(err.Error(), "egress: target refused: "))
	}
	if len(req.Description) > 1024 {
		return badRequest(w, "description is longer than 1024 bytes")
	}
	var requested []string
	if req.Families != nil {
		requested = *req.Families
		if requested == nil {
			requested = []string{}
		}
	}
	fams, ok := familiesFor(w, c, requested)
	if !ok {
		return nil
	}
	e, secret, err := h.app.store.CreateEndpoint(ctx, h.app.now(), c.org, req.URL, fams, req.Description, h.MaxEndpoints)
	if errors.Is(err, store.ErrTooMany) {
		return badRequest(w, fmt.Sprintf("an organization may register at most %d webhook endpoints; delete one first", h.MaxEndpoints))
	}
	if err != nil {
		return h.internal(w, r, err)
	}
	w.Header().Set("Location", h.Prefix+"/webhook-endpoints/"+e.ID)
	return writeJSON(w, http.StatusCreated, createdEndpoint{Endpoint: e, Secret: secret})
}

func (h *Handler) list(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller) error {
	if r.URL.RawQuery != "" {
		return badRequest(w, "this list takes no parameters")
	}
	eps, err := h.app.store.ListEndpoints(ctx, c.org)
	if err != nil {
		return h.internal(w, r, err)
	}
	return writeJSON(w, http.StatusOK, struct {
		Items []store.Endpoint `json:"items"`
	}{eps})
}

// found answers 404 for ErrNotFound (another organization's endpoint
// included: never 403) and 500 for other errors; it reports whether err was nil.
func (h *Handler) found(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrNotFound):
		_ = writeRaw(w, http.StatusNotFound, bodyNotFound)
	default:
		_ = h.internal(w, r, err)
	}
	return false
}

func (h *Handler) get(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	e, err := h.app.store.GetEndpoint(ctx, c.org, id)
	if !h.found(w, r, err) {
		return nil
	}
	return writeJSON(w, http.StatusOK, e)
}

func (h *Handler) delete(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	if !h.found(w, r, h.app.store.DeleteEndpoint(ctx, c.org, id)) {
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) rotate(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	var empty struct{}
	if !decodeBody(w, r, &empty, true) {
		return nil
	}
	now := h.app.now()
	secret, err := h.app.store.RotateSecret(ctx, now, c.org, id, h.app.overlap)
	if !h.found(w, r, err) {
		return nil
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"secret":                     secret,
		"previous_secret_expires_at": now.Add(h.app.overlap).UTC(),
	})
}

func (h *Handler) replay(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	var req struct {
		FromCursor *string `json:"from_cursor"`
	}
	if !decodeBody(w, r, &req, true) {
		return nil
	}
	var after int64
	if req.FromCursor != nil {
		var err error
		if after, err = store.DecodeCursor(*req.FromCursor); err != nil {
			return badRequest(w, "from_cursor is not a cursor of this feed")
		}
	}
	res, err := h.app.store.Replay(ctx, h.app.now(), c.org, id, after, h.MaxReplay)
	if !h.found(w, r, err) {
		return nil
	}
	var next *string
	if res.More {
		s := store.EncodeCursor(res.LastSeq)
		next = &s
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"scheduled": res.Scheduled, "nextCursor": next})
}

func (h *Handler) test(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	var empty struct{}
	if !decodeBody(w, r, &empty, true) {
		return nil
	}
	now := h.app.now()
	eventID, err := h.app.store.Test(ctx, now, c.org, id, func(eventID string) ([]byte, error) {
		b, err := json.Marshal(store.Envelope{ID: eventID, Type: "ping", OccurredAt: now.UTC(), Data: store.Ping{EndpointID: id}})
		if err != nil {
			return nil, fmt.Errorf("webhooks: ping: %w", err)
		}
		return b, nil
	})
	if !h.found(w, r, err) {
		return nil
	}
	return writeJSON(w, http.StatusAccepted, map[string]string{"event_id": eventID})
}

// Deliveries cursors: base64url of "wd1:<delivery id>".
func encodeDeliveryCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("wd1:" + strconv.FormatInt(id, 10)))
}

func decodeDeliveryCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(raw), "wd1:")
	if !ok {
		return 0, errors.New("bad cursor")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("bad cursor")
	}
	return n, nil
}

func (h *Handler) deliveries(ctx context.Context, w http.ResponseWriter, r *http.Request, c caller, id string) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest(w, "malformed query string")
	}
	for k := range q {
		if k != "cursor" && k != "limit" {
			return badRequest(w, fmt.Sprintf("unknown parameter %q", k))
		}
	}
	limit, err := parseLimit(q)
	if err != nil {
		return badRequest(w, err.Error())
	}
	var before int64
	if v := q.Get("cursor"); v != "" {
		if before, err = decodeDeliveryCursor(v); err != nil {
			return badRequest(w, "cursor is not a cursor of this list")
		}
	}
	ds, more, err := h.app.store.Deliveries(ctx, c.org, id, before, limit)
	if !h.found(w, r, err) {
		return nil
	}
	var next *string
	if more {
		s := encodeDeliveryCursor(ds[len(ds)-1].ID)
		next = &s
	}
	return writeJSON(w, http.StatusOK, page{Items: ds, NextCursor: next})
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
