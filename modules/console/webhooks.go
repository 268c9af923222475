package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/webhooks"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The webhooks pages call the webhooks service (modules/webhooks), the code
// the /v1/webhook-endpoints API runs: the same URL policy, family rules,
// endpoint bound and sealed secrets.

// caller is the organization as the webhooks service sees it: its families
// are those of the tiers of its live keys in env (what an API key of the
// organization would be entitled to).
func (h *Handler) caller(r *http.Request, o orgCtx, env string) (webhooks.Caller, error) {
	live, err := consolestore.LiveKeys(r.Context(), h.pool, o.org.ID)
	if err != nil {
		return webhooks.Caller{}, err
	}
	seen := map[string]bool{}
	c := webhooks.Caller{Org: o.org.ID, Env: env}
	for _, k := range live {
		if env != "" && k.Env != env {
			continue
		}
		for _, f := range h.hooksApp.TierFamilies(k.Tier) {
			if !seen[f] {
				seen[f] = true
				c.Families = append(c.Families, f)
			}
		}
	}
	return c, nil
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

func (h *Handler) renderWebhooks(w http.ResponseWriter, r *http.Request, m member, o orgCtx, code int, notice, refusal string, c *createdEndpoint) {
	if h.noWebhooks(w, r) {
		return
	}
	eps, err := h.hooks.List(r.Context(), o.org.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := h.orgView(m, o, "webhooks", "Webhooks", map[string]any{"Endpoints": eps, "Created": c, "Families": store.Families()})
	v.Notice, v.Error = notice, refusal
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
	c, err := h.caller(r, o, env)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var fams []string // none ticked: every family the tier entitles
	if picked := r.PostForm["family"]; len(picked) > 0 {
		fams = picked
	}
	ep, secret, err := h.hooks.Create(r.Context(), c, strings.TrimSpace(r.PostForm.Get("url")), fams, r.PostForm.Get("description"))
	var in *webhooks.InputError
	switch {
	case errors.As(err, &in):
		h.renderWebhooks(w, r, m, o, http.StatusBadRequest, "", "Not created: "+in.Message+".", nil)
		return
	case errors.Is(err, webhooks.ErrNotEntitled):
		h.renderWebhooks(w, r, m, o, http.StatusForbidden, "", "Not created: the organization's tier does not include every family you picked.", nil)
		return
	case err != nil:
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
	ep, err := h.hooks.Get(r.Context(), o.org.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
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
	ds, more, err := h.hooks.Deliveries(r.Context(), o.org.ID, id, max(before, 0), pageSize)
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
	run func(id string) (endpointResult, string, error)) {
	if h.noWebhooks(w, r) || !parseForm(w, r) {
		return
	}
	id := r.PathValue("id")
	res, detail, err := run(id)
	var in *webhooks.InputError
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.notFound(w, r)
		return
	case errors.As(err, &in):
		res = endpointResult{code: http.StatusBadRequest, refusal: in.Message + "."}
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
	h.endpointAction(w, r, m, o, "webhook.rotate_secret", func(id string) (endpointResult, string, error) {
		secret, until, err := h.hooks.RotateSecret(r.Context(), o.org.ID, id)
		return endpointResult{secret: secret, notice: "Secret rotated. Copy the new secret now: it is shown only once. " +
			"The previous secret also signs deliveries until " + until.UTC().Format("2006-01-02 15:04 UTC") + "."}, "", err
	})
}

func (h *Handler) testEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.endpointAction(w, r, m, o, "webhook.test", func(id string) (endpointResult, string, error) {
		ev, err := h.hooks.Test(r.Context(), o.org.ID, id)
		return endpointResult{notice: "Test event " + ev + " queued: it appears in the deliveries below."}, ev, err
	})
}

func (h *Handler) replayEndpoint(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	h.endpointAction(w, r, m, o, "webhook.replay", func(id string) (endpointResult, string, error) {
		c, err := h.caller(r, o, "")
		if err != nil {
			return endpointResult{}, "", err
		}
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
	if r.PostForm.Get("confirm") != id {
		h.renderEndpoint(w, r, m, o, endpointResult{code: http.StatusBadRequest, refusal: "Not deleted: type the endpoint id to confirm."})
		return
	}
	err := h.hooks.Delete(r.Context(), o.org.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		h.notFound(w, r)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "webhook.delete", id, "")
	h.renderWebhooks(w, r, m, o, http.StatusOK, "Endpoint "+id+" deleted.", "", nil)
}
