package gqlcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/caddyserver/caddy/v2"
)

// AdminAPI is the admin.api.graphql_cache module: POST /graphql-cache/purge
// on Caddy's admin endpoint invalidates tags (or everything) in every live
// cache, whatever the backend.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.graphql_cache", New: func() caddy.Module { return new(AdminAPI) }}
}

// Routes returns the purge route.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/graphql-cache/purge", Handler: caddy.AdminHandlerFunc(servePurge)}}
}

// PurgeRequest is the body of POST /graphql-cache/purge: tags to
// invalidate, or all.
type PurgeRequest struct {
	Tags []string `json:"tags"`
	All  bool     `json:"all"`
}

// PurgeResponse is its answer: the number of tags invalidated (with all,
// the number of caches flushed).
type PurgeResponse struct {
	PurgedTags int `json:"purged_tags"`
}

// maxPurgeBody bounds a purge request's body.
const maxPurgeBody = 1 << 20

func servePurge(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed: use POST", r.Method)}
	}
	req, err := readPurge(io.LimitReader(r.Body, maxPurgeBody+1))
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	var sharedErr error
	instances.Range(func(_, v any) bool {
		in := v.(*instance)
		if req.All {
			in.store.flush()
			in.store.metrics.Load().flushes.Inc()
		} else {
			in.store.invalidate(req.Tags)
		}
		// Shared entries are not indexed by tag: any purge makes every one
		// stored before it unusable (README.md "Shared in Redis").
		if in.shared != nil {
			if err := in.shared.purge(); err != nil {
				in.store.metrics.Load().shared(sharedError)
				in.shared.reportError("purge", err)
				sharedErr = errors.New("purged in memory, but the shared Redis purge may be incomplete (send it again): " + err.Error())
			}
		}
		return true
	})
	if sharedErr != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: sharedErr}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(PurgeResponse{PurgedTags: len(req.Tags)})
}

// readPurge decodes and checks a purge request.
func readPurge(body io.Reader) (PurgeRequest, error) {
	var req PurgeRequest
	data, err := io.ReadAll(body)
	if err != nil {
		return req, fmt.Errorf("reading the purge request: %w", err)
	}
	if len(data) > maxPurgeBody {
		return req, errors.New("purge request larger than 1 MiB")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf(`purge request: want {"tags":["<tag>",...]} or {"all":true}: %w`, err)
	}
	if dec.More() {
		return req, errors.New("purge request: trailing data after the JSON object")
	}
	if req.All == (len(req.Tags) > 0) {
		return req, errors.New(`purge request: give either "tags" (non-empty) or "all": true`)
	}
	for _, t := range req.Tags {
		if t == "" || strings.ContainsFunc(t, notInTag) {
			return req, fmt.Errorf("purge request: tag %q must be one word without commas, spaces or control characters", t)
		}
	}
	return req, nil
}

// notInTag reports the runes no tag holds: a comma, white space (a tag is
// trimmed of it wherever it is read) or a control character. Such a tag
// could never match an entry, and a purge of it would answer 200 for nothing.
func notInTag(r rune) bool { return r == ',' || unicode.IsSpace(r) || unicode.IsControl(r) }

// Interface guards
var _ caddy.AdminRouter = AdminAPI{}
