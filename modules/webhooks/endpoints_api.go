package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

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
	e, secret, err := h.app.store.CreateEndpoint(ctx, h.app.now(), store.EndpointSpec{Org: c.org, Env: c.env, URL: req.URL,
		Families: fams, Description: req.Description}, h.MaxEndpoints)
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
		_ = writeRaw(w, http.StatusNotFound, contract.BodyNotFound)
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
	after := store.SinceCreation // without a cursor: what happened since the endpoint was registered
	if req.FromCursor != nil {
		var err error
		if after, err = store.DecodeCursor(*req.FromCursor); err != nil {
			return badRequest(w, "from_cursor is not a cursor of this feed")
		}
	}
	res, err := h.app.store.Replay(ctx, h.app.now(), c.org, id, after, h.MaxReplay, c.families)
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
