package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/consolestore"
	"github.com/civicgate/civicgate/modules/console/usagechart"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// usageRange is one of the periods the usage page offers.
type usageRange struct {
	Name  string
	Label string
	Span  time.Duration
	Step  time.Duration
}

var usageRanges = []usageRange{
	{"24h", "Last 24 hours, by hour", 24 * time.Hour, time.Hour},
	// 2-hour bars: 168 hourly ones are too thin to see (usagechart.MinSlot).
	{"7d", "Last 7 days, by 2 hours", 7 * 24 * time.Hour, 2 * time.Hour},
	{"90d", "Last 90 days, by day", 90 * 24 * time.Hour, 24 * time.Hour},
}

// usageSelection reads ?range= and ?key= (a key of the organization, or all);
// it answers itself when ok is false.
func (h *Handler) usageSelection(w http.ResponseWriter, r *http.Request, o orgCtx) (rg usageRange, keyID string, from, to time.Time, ok bool) {
	rg = usageRanges[0]
	if name := r.URL.Query().Get("range"); name != "" {
		found := false
		for _, c := range usageRanges {
			if c.Name == name {
				rg, found = c, true
			}
		}
		if !found {
			h.status(w, r, http.StatusBadRequest, "Unknown period", "Choose 24h, 7d or 90d.")
			return rg, "", from, to, false
		}
	}
	if keyID = r.URL.Query().Get("key"); strings.HasPrefix(keyID, consolestore.TokenSubjectPrefix) {
		used, err := consolestore.TokenSubjectUsedBy(r.Context(), h.pool, keyID, o.org.ID)
		if err != nil {
			h.fail(w, r, err)
			return rg, "", from, to, false
		}
		if !used {
			h.notFound(w, r)
			return rg, "", from, to, false
		}
	} else if keyID != "" {
		org, err := keystore.KeyOrg(r.Context(), h.pool, keyID)
		if err != nil && !errors.Is(err, keystore.ErrNoSuchKey) {
			h.fail(w, r, err)
			return rg, "", from, to, false
		}
		if err != nil || org != o.org.ID {
			h.notFound(w, r)
			return rg, "", from, to, false
		}
	}
	to = time.Now().UTC().Truncate(rg.Step).Add(rg.Step)
	from = to.Add(-rg.Span)
	return rg, keyID, from, to, true
}

func (h *Handler) usagePage(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	rg, keyID, from, to, ok := h.usageSelection(w, r, o)
	if !ok {
		return
	}
	rows, err := consolestore.UsageSeries(r.Context(), h.pool, consolestore.UsageQuery{OrgID: o.org.ID, KeyID: keyID, From: from, To: to, Step: rg.Step})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	keys, err := consolestore.UsageKeys(r.Context(), h.pool, o.org.ID, from, to, pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	subjects, err := consolestore.UsageTokenSubjects(r.Context(), h.pool, o.org.ID, from, to, pageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pts := usagechart.Bucket(rows, keyID, from, to, rg.Step)
	title := "Requests of every key and access-token subject, " + rg.Label
	switch {
	case strings.HasPrefix(keyID, consolestore.TokenSubjectPrefix):
		title = "Requests of access-token subject " + keyID + ", " + rg.Label
	case keyID != "":
		title = "Requests of key " + keyID + ", " + rg.Label
	}
	h.render(w, r, http.StatusOK, "usage", h.orgView(m, o, "usage", "Usage", map[string]any{
		"Chart": usagechart.HTML(pts, usagechart.Options{Title: title, Step: rg.Step}),
		"Total": usage.Sum(rows), "Range": rg, "Ranges": usageRanges, "KeyID": keyID, "Keys": keys, "Subjects": subjects,
	}))
}

func (h *Handler) usageCSV(w http.ResponseWriter, r *http.Request, m member, o orgCtx) {
	_, keyID, from, to, ok := h.usageSelection(w, r, o)
	if !ok {
		return
	}
	rows, err := consolestore.UsageRows(r.Context(), h.pool, o.org.ID, keyID, from, to)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage-`+o.org.ID+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	if err := usagechart.CSV(w, rows, true); err != nil {
		h.logger.Warn("console: usage CSV cut short", errField(err))
	}
}
