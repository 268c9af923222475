package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/contract"
)

// orgCtx is the organization a page is about.
type orgCtx struct {
	org consolestore.Org
}

// inOrg resolves /orgs/{org}/…: a member sees only their own organization
// (any other answers 404, as if it did not exist), an operator every one.
func (h *Handler) inOrg(page func(http.ResponseWriter, *http.Request, member, orgCtx)) func(http.ResponseWriter, *http.Request, member) {
	return func(w http.ResponseWriter, r *http.Request, m member) {
		id := r.PathValue("org")
		if !m.operator() && id != m.OrgID {
			h.notFound(w, r)
			return
		}
		o, err := consolestore.GetOrg(r.Context(), h.pool, id)
		if errors.Is(err, consolestore.ErrNotFound) || (err == nil && o.Status == keystore.OrgDeleted) {
			h.notFound(w, r)
			return
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		page(w, r, m, orgCtx{org: o})
	}
}

// admin lets only admins and operators through.
func (h *Handler) admin(page func(http.ResponseWriter, *http.Request, member, orgCtx)) func(http.ResponseWriter, *http.Request, member, orgCtx) {
	return func(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
		if !m.canChange() {
			h.status(w, r, http.StatusForbidden, "Not allowed",
				"Your role ("+m.Role+") can see this organization but not change it. Ask an admin.")
			return
		}
		page(w, r, m, o)
	}
}

// operatorOnly lets only operators through.
func (h *Handler) operatorOnly(page func(http.ResponseWriter, *http.Request, member, orgCtx)) func(http.ResponseWriter, *http.Request, member, orgCtx) {
	return func(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
		if !m.operator() {
			h.status(w, r, http.StatusForbidden, "Not allowed", "Only operators suspend organizations or change their tier.")
			return
		}
		page(w, r, m, o)
	}
}

func (h *Handler) orgView(m member, o orgCtx, nav, title string, data any) view {
	return view{Title: title, Member: &m, Org: &o.org, Nav: nav, Data: data}
}

// limitLine is one rate of a live key's tier with the requests counted in
// its trailing window.
type limitLine struct {
	KeyPrefix, Env, Tier, Window string
	Used, Quota                  int64
	Percent                      int
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	ctx := r.Context()
	live, err := consolestore.LiveKeys(ctx, h.pool, o.org.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var ids []string
	windows := map[time.Duration]bool{}
	for _, k := range live {
		ids = append(ids, k.ID)
		for _, rt := range h.tiers[k.Tier].Rates {
			windows[rt.Window] = true
		}
	}
	var ws []time.Duration
	for w := range windows {
		ws = append(ws, w)
	}
	used, err := consolestore.RecentUse(ctx, h.pool, ids, ws)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	count := map[string]int64{}
	for _, u := range used {
		count[u.KeyID+"|"+u.Window.String()] = u.Admitted
	}
	var lines []limitLine
	for _, k := range live {
		for _, rt := range h.tiers[k.Tier].Rates {
			n := count[k.ID+"|"+rt.Window.String()]
			pct := int(min(100, n*100/max(rt.Quota, 1)))
			lines = append(lines, limitLine{KeyPrefix: k.Prefix, Env: k.Env, Tier: k.Tier,
				Window: contract.WindowName(rt), Used: n, Quota: rt.Quota, Percent: pct})
		}
	}
	var budgets []string
	for _, t := range o.org.Tiers {
		if tc, ok := h.tiers[t]; ok && tc.Cost != nil {
			budgets = append(budgets, t+": "+groupDigits(tc.Cost.Quota)+" cost points per "+contract.WindowName(*tc.Cost))
		}
	}
	grant, err := h.activeGrant(ctx, o.org.ID, o.org.Tiers, time.Now())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "overview", h.orgView(m, o, "overview", o.org.Name, map[string]any{
		"Live": live, "Limits": lines, "Budgets": budgets, "Grant": grant, "Tiers": h.tierNames(), "Unconfigured": unconfigured(o.org.Tiers, h.tiers),
	}))
}

// unconfigured lists tiers keys carry that the console's tier lines lack.
func unconfigured(have []string, tiers map[string]tier) []string {
	var out []string
	for _, t := range have {
		if _, ok := tiers[t]; !ok {
			out = append(out, t)
		}
	}
	return out
}

// unknownTiers lists the tiers of have that no configuration this console
// runs with defines — neither its own tier lines nor the civic_webhooks
// app's (the lines civic_auth reads): every request with such a key is
// refused 403 (docs/design.md D8), so the organizations page flags them.
func (h *Handler) unknownTiers(have []string) []string {
	var out []string
	for _, t := range unconfigured(have, h.tiers) {
		if h.hooksApp == nil || !h.hooksApp.KnowsTier(t) {
			out = append(out, t)
		}
	}
	return out
}

// listedOrg is a row of the organizations page.
type listedOrg struct {
	consolestore.Org
	UnknownTiers []string
	Grant        *keystore.Grant // in force now, or nil
}

func (h *Handler) orgsPage(w http.ResponseWriter, r *http.Request, m member) {
	if !m.operator() {
		h.notFound(w, r)
		return
	}
	after := r.URL.Query().Get("after")
	orgs, more, err := consolestore.ListOrgs(r.Context(), h.pool, after, pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	next := ""
	if more {
		next = orgs[len(orgs)-1].Name
	}
	ids := make([]string, len(orgs))
	for i, o := range orgs {
		ids[i] = o.ID
	}
	grants, err := keystore.OrgGrants(r.Context(), h.pool, ids) // the page's organizations, one query
	if err != nil {
		h.fail(w, r, err)
		return
	}
	now := time.Now()
	rows := make([]listedOrg, len(orgs))
	for i, o := range orgs {
		rows[i] = listedOrg{Org: o, UnknownTiers: h.unknownTiers(o.Tiers)}
		if g := grants[o.ID]; (g.Requests > 0 || g.Cost > 0) && g.Active(now) {
			rows[i].Grant = &g
		}
	}
	h.render(w, r, http.StatusOK, "orgs", view{Title: "Organizations", Member: &m, Nav: "orgs",
		Data: map[string]any{"Orgs": rows, "Next": next}})
}

func (h *Handler) setOrgStatus(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if !parseForm(w, r) {
		return
	}
	status := r.PostForm.Get("status")
	if status != keystore.OrgActive && status != keystore.OrgSuspended {
		h.status(w, r, http.StatusBadRequest, "Not changed", "Status must be active or suspended.")
		return
	}
	if err := keystore.SetOrgStatus(r.Context(), h.pool, o.org.Name, status); err != nil {
		h.fail(w, r, err)
		return
	}
	action := "org.resume"
	if status == keystore.OrgSuspended {
		action = "org.suspend"
	}
	h.audit(r, m, o.org.ID, action, o.org.Name, "")
	http.Redirect(w, r, "/orgs/"+o.org.ID+"/", http.StatusSeeOther)
}

func (h *Handler) setOrgTier(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	if !parseForm(w, r) {
		return
	}
	t := r.PostForm.Get("tier")
	if _, ok := h.tiers[t]; !ok {
		h.status(w, r, http.StatusBadRequest, "Not changed", "Choose one of the configured tiers.")
		return
	}
	n, err := keystore.SetTier(r.Context(), h.pool, o.org.Name, t)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.audit(r, m, o.org.ID, "org.set_tier", o.org.Name, t+" ("+plural(n, "key")+" changed)")
	http.Redirect(w, r, "/orgs/"+o.org.ID+"/", http.StatusSeeOther)
}

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	entries, more, err := keystore.ListAudit(r.Context(), h.pool, keystore.AuditQuery{OrgID: o.org.ID, Before: max(before, 0), Limit: pageSize})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	next := ""
	if more {
		next = strconv.FormatInt(entries[len(entries)-1].ID, 10)
	}
	h.render(w, r, http.StatusOK, "audit", h.orgView(m, o, "audit", "Audit log", map[string]any{"Entries": entries, "Next": next}))
}

// orgTier is the tier a key issued by an admin gets: the tier of the
// organization's newest live key (admins cannot pick a tier; operators can).
func orgTier(live []consolestore.Key) string {
	t := ""
	for _, k := range live {
		t = k.Tier
	}
	return strings.TrimSpace(t)
}
