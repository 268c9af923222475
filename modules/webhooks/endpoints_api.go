package webhooks

import (
	"context"
	"net/http"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The webhook-endpoint API: each method decodes the request, calls the
// Service (which holds every rule, shared with the console) and encodes its
// answer; h.fail answers the Service's refusals.

type createRequest struct {
	URL         string    `json:"url"`
	Families    *[]string `json:"families"`
	Description string    `json:"description"`
}

type createdEndpoint struct {
	store.Endpoint
	Secret string `json:"secret"`
}

func (h *Handler) create(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller) error {
	var req createRequest
	if !decodeBody(w, r, &req, false) {
		return nil
	}
	var requested []string // nil: the tier's families
	if req.Families != nil {
		requested = *req.Families
		if requested == nil {
			requested = []string{} // given, and empty: refused
		}
	}
	e, secret, err := h.svc.Create(ctx, c, req.URL, requested, req.Description)
	if err != nil {
		return h.fail(w, r, err)
	}
	h.audit(ctx, r, c, "webhook.create", e.ID, e.URL)
	w.Header().Set("Location", h.Prefix+"/webhook-endpoints/"+e.ID)
	return writeJSON(w, http.StatusCreated, createdEndpoint{Endpoint: e, Secret: secret})
}

func (h *Handler) list(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller) error {
	if r.URL.RawQuery != "" {
		return badRequest(w, "this list takes no parameters")
	}
	eps, err := h.svc.List(ctx, c)
	if err != nil {
		return h.fail(w, r, err)
	}
	return writeJSON(w, http.StatusOK, struct {
		Items []store.Endpoint `json:"items"`
	}{eps})
}

func (h *Handler) get(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	e, err := h.svc.Get(ctx, c, id)
	if err != nil {
		return h.fail(w, r, err)
	}
	return writeJSON(w, http.StatusOK, e)
}

func (h *Handler) delete(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	if err := h.svc.Delete(ctx, c, id); err != nil {
		return h.fail(w, r, err)
	}
	h.audit(ctx, r, c, "webhook.delete", id, "")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) rotate(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	var empty struct{}
	if !decodeBody(w, r, &empty, true) {
		return nil
	}
	secret, expires, err := h.svc.RotateSecret(ctx, c, id)
	if err != nil {
		return h.fail(w, r, err)
	}
	h.audit(ctx, r, c, "webhook.rotate_secret", id, "")
	return writeJSON(w, http.StatusOK, map[string]any{
		"secret":                     secret,
		"previous_secret_expires_at": expires,
	})
}

func (h *Handler) replay(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	var req struct {
		FromCursor *string `json:"from_cursor"`
	}
	if !decodeBody(w, r, &req, true) {
		return nil
	}
	scheduled, next, err := h.svc.Replay(ctx, c, id, req.FromCursor)
	if err != nil {
		return h.fail(w, r, err)
	}
	from := "" // the console's detail for the same replay
	if req.FromCursor != nil {
		from = *req.FromCursor
	}
	h.audit(ctx, r, c, "webhook.replay", id, "from "+from)
	return writeJSON(w, http.StatusAccepted, map[string]any{"scheduled": scheduled, "nextCursor": next})
}

func (h *Handler) test(ctx context.Context, w http.ResponseWriter, r *http.Request, c Caller, id string) error {
	var empty struct{}
	if !decodeBody(w, r, &empty, true) {
		return nil
	}
	eventID, err := h.svc.Test(ctx, c, id)
	if err != nil {
		return h.fail(w, r, err)
	}
	h.audit(ctx, r, c, "webhook.test", id, eventID)
	return writeJSON(w, http.StatusAccepted, map[string]string{"event_id": eventID})
}
