package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/webhooks"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The webhooks pages call the webhooks service (modules/webhooks), the code
// the /v1/webhook-endpoints API runs, for every read and change: who may
// (organization status, the changes family, the member's role), the URL
// policy, family rules, endpoint limit, replay bound and sealed secrets are
// its rules, not the console's (docs/design.md D43).

// caller is the organization as the webhooks service sees it — the
// families of the tiers of its live keys in env, as an API key of the
// organization would carry — with the member's role.
func (h *Handler) caller(r *http.Request, m member, o orgCtx, env string) (webhooks.Caller, error) {
	c, err := h.hooks.CallerOf(r.Context(), o.org.ID, env)
	c.ReadOnly = !m.canChange()
	return c, err
}

// refusal is what the console says for a refusal of the webhooks service
// (the API answers the same cases 403, 403, 403 and 400); ok is false for
// any other error.
func refusal(m member, err error) (code int, text string, ok bool) {
	var in *webhooks.InputError
	switch {
	case errors.Is(err, webhooks.ErrSuspended):
		return http.StatusForbidden, "This organization is suspended: its webhook endpoints cannot be used or changed until an operator resumes it.", true
	case errors.Is(err, webhooks.ErrNoManageFamily):
		return http.StatusForbidden, "The organization's tier does not include the " + webhooks.ManageFamily +
			" family, which webhooks need (as for the /v1/webhook-endpoints API). An operator can change its tier.", true
	case errors.Is(err, webhooks.ErrNotEntitled):
		return http.StatusForbidden, "The organization's tier does not include every family you picked.", true
	case errors.Is(err, webhooks.ErrReadOnly):
		return http.StatusForbidden, "Your role (" + m.Role + ") can see this organization but not change it. Ask an admin.", true
	case errors.As(err, &in):
		return http.StatusBadRequest, in.Message + ".", true
	}
	return 0, "", false
}

func (h *Handler) noWebhooks(w http.ResponseWriter, r *http.Request) bool {
	if h.hooks == nil {
		h.status(w, r, http.StatusNotFound, "Webhooks are not configured", "This gateway has no civic_webhooks app.")
		return true
	}
	return false
}

func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.renderWebhooks(w, r, m, o, http.StatusOK, "", "", nil)
}

// createdEndpoint is an endpoint with its secret, shown once.
type createdEndpoint struct {
	store.Endpoint
	Secret string
}

func (h *Handler) renderWebhooks(w http.ResponseWriter, r *http.Request, m member, o orgCtx, code int, notice, refused string, made *createdEndpoint) {
	if h.noWebhooks(w, r) {
		return
	}
	c, err := h.caller(r, m, o, "")
	var eps []store.Endpoint
	if err == nil {
		eps, err = h.hooks.List(r.Context(), c)
	}
	if rc, text, ok := refusal(m, err); ok {
		// The organization may not use webhooks at all: say why instead of a list.
		code = max(code, rc)
		if !strings.Contains(refused, text) { // a refused create may have said it already
			refused = strings.TrimSpace(refused + " " + text)
		}
	} else if err != nil {
		h.fail(w, r, err)
		return
	}
	v := h.orgView(m, o, "webhooks", "Webhooks", map[string]any{"Endpoints": eps, "Created": made, "Families": h.hooks.EventFamilies(),
		"CanCreate": err == nil && !c.ReadOnly})
	v.Notice, v.Error = notice, refused
	h.render(w, r, code, "webhooks", v)
}

func (h *Handler) createEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if h.noWebhooks(w, r) || !parseForm(w, r) {
		return
	}
	env := r.PostForm.Get("env")
	if !keystore.ValidEnv(env) {
		h.renderWebhooks(w, r, m, o, http.StatusBadRequest, "", "Choose the live or test environment.", nil)
		return
	}
	c, err := h.caller(r, m, o, env)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var fams []string // none ticked: every family the tier entitles
	if picked := r.PostForm["family"]; len(picked) > 0 {
		fams = picked
	}
	ep, secret, err := h.hooks.Create(r.Context(), c, strings.TrimSpace(r.PostForm.Get("url")), fams, r.PostForm.Get("description"))
	if code, text, ok := refusal(m, err); ok {
		sep := ". " // a sentence of its own; an input error reads "Not created: url is required."
		if errors.As(err, new(*webhooks.InputError)) {
			sep = ": "
		}
		h.renderWebhooks(w, r, m, o, code, "", "Not created"+sep+text, nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "webhook.create", ep.ID, ep.URL)
	h.renderWebhooks(w, r, m, o, http.StatusOK, "Endpoint created. Copy its signing secret now: it is shown only once.", "",
		&createdEndpoint{Endpoint: ep, Secret: secret})
}

// endpointResult is what an action on one endpoint shows above its page.
type endpointResult struct {
	notice, refusal string
	code            int
	secret          string
}

func (h *Handler) endpointPage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.renderEndpoint(w, r, m, o, endpointResult{code: http.StatusOK})
}

func (h *Handler) renderEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx, res endpointResult) {
	if h.noWebhooks(w, r) {
		return
	}
	id := r.PathValue("id")
	c, err := h.caller(r, m, o, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ep, err := h.hooks.Get(r.Context(), c, id)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
		return
	}
	if code, text, ok := refusal(m, err); ok {
		// Not allowed to read it either (suspended, no changes family): the list page says why.
		h.renderWebhooks(w, r, m, o, code, "", text, nil)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var before int64
	if r.Method == http.MethodGet {
		if b, err := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64); err == nil {
			before = b // not a number (or out of range): the first page
		}
	}
	ds, more, err := h.hooks.Deliveries(r.Context(), c, id, max(before, 0), pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	next := ""
	if more && len(ds) > 0 {
		next = strconv.FormatInt(ds[len(ds)-1].ID, 10)
	}
	v := h.orgView(m, o, "webhooks", "Webhook endpoint", map[string]any{"Endpoint": ep, "Deliveries": ds, "Next": next, "Secret": res.secret})
	v.Notice, v.Error = res.notice, res.refusal
	h.render(w, r, res.code, "endpoint", v)
}

// endpointAction runs an action on the endpoint in the path, answering 404
// for another organization's id.
func (h *Handler) endpointAction(w http.ResponseWriter, r *http.Request, m member, o orgCtx, action string,
	run func(c webhooks.Caller, id string) (endpointResult, string, error)) {
	if h.noWebhooks(w, r) || !parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	c, err := h.caller(r, m, o, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	res, detail, err := run(c, id)
	code, text, refused := refusal(m, err)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.notFound(w, r)
		return
	case refused:
		res = endpointResult{code: code, refusal: text}
	case err != nil:
		h.fail(w, r, err)
		return
	default:
		h.audit(r, m, o.org.ID, action, id, detail)
	}
	if res.code == 0 {
		res.code = http.StatusOK
	}
	h.renderEndpoint(w, r, m, o, res)
}

func (h *Handler) rotateEndpointSecret(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.endpointAction(w, r, m, o, "webhook.rotate_secret", func(c webhooks.Caller, id string) (endpointResult, string, error) {
		secret, until, err := h.hooks.RotateSecret(r.Context(), c, id)
		return endpointResult{secret: secret, notice: "Secret rotated. Copy the new secret now: it is shown only once. " +
			"The previous secret also signs deliveries until " + until.UTC().Format("2006-01-02 15:04 UTC") + "."}, "", err
	})
}

func (h *Handler) testEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.endpointAction(w, r, m, o, "webhook.test", func(c webhooks.Caller, id string) (endpointResult, string, error) {
		ev, err := h.hooks.Test(r.Context(), c, id)
		return endpointResult{notice: "Test event " + ev + " queued: it appears in the deliveries below."}, ev, err
	})
}

func (h *Handler) replayEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.endpointAction(w, r, m, o, "webhook.replay", func(c webhooks.Caller, id string) (endpointResult, string, error) {
		var from *string
		if cur := strings.TrimSpace(r.PostForm.Get("from_cursor")); cur != "" {
			from = &cur
		}
		n, next, err := h.hooks.Replay(r.Context(), c, id, from)
		note := "Replay scheduled " + plural(int64(n), "event") + "."
		if next != nil {
			note += " More remain: replay again from cursor " + *next + "."
		}
		return endpointResult{notice: note}, "from " + r.PostForm.Get("from_cursor"), err
	})
}

func (h *Handler) deleteEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if h.noWebhooks(w, r) || !parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	c, err := h.caller(r, m, o, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if r.PostForm.Get("confirm") != id {
		h.renderEndpoint(w, r, m, o, endpointResult{code: http.StatusBadRequest, refusal: "Not deleted: type the endpoint id to confirm."})
		return
	}
	err = h.hooks.Delete(r.Context(), c, id)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
		return
	}
	if code, text, ok := refusal(m, err); ok {
		h.renderEndpoint(w, r, m, o, endpointResult{code: code, refusal: "Not deleted. " + text})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "webhook.delete", id, "")
	h.renderWebhooks(w, r, m, o, http.StatusOK, "Endpoint "+id+" deleted.", "", nil)
}
