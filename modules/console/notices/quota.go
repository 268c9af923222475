package notices

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// KindQuota is the kind of the quota mails.
const KindQuota = "quota"

// maxCrossings bounds the crossings one round reads (the oldest first).
const maxCrossings = 1000

// StaleCrossing is how long after its window ended a crossing still not
// mailed (its organization has no admin yet) is dropped: marked without a
// mail, so such rows hold the oldest-first read at its bound a day at most,
// and a new admin is not told of last week's minute.
const StaleCrossing = 24 * time.Hour

// Quota tells an organization's admins that its keys used 80 % or all of a
// request quota or cost budget in a window: once per crossing row that the
// usage flush wrote (usage.UnmailedCrossings, docs/design.md D81), the rows
// marked mailed by usage.MarkCrossingsMailed in the transaction that
// enqueues the mails (Recorder). The 80 % and 100 % rows of one window read
// in the same round make one mail, of the higher level.
type Quota struct {
	SiteURL string
}

// Kind implements Source.
func (Quota) Kind() string { return KindQuota }

// crossingGroup is what makes two levels of a crossing one mail.
type crossingGroup struct {
	org, key, policy, kind string
	window                 time.Time
}

// Due implements Source.
func (s Quota) Due(ctx context.Context, pool *pgxpool.Pool, now time.Time) ([]Notice, error) {
	cs, err := usage.UnmailedCrossings(ctx, pool, maxCrossings)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	var stale []int64
	groups := map[crossingGroup][]usage.Crossing{}
	var order []crossingGroup
	orgs := map[string]bool{}
	for _, c := range cs {
		if now.Sub(c.WindowStart.Add(c.Window)) > StaleCrossing {
			stale = append(stale, c.ID)
			continue
		}
		g := crossingGroup{c.OrgID, c.KeyID, c.Policy, c.Kind, c.WindowStart}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], c)
		orgs[c.OrgID] = true
	}
	if len(stale) > 0 {
		if _, err := usage.MarkCrossingsMailed(ctx, pool, stale); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	grants, err := keystore.OrgGrants(ctx, pool, slices.Collect(maps.Keys(orgs)))
	if err != nil {
		return nil, err
	}
	out := make([]Notice, 0, len(order))
	for _, g := range order {
		rows := groups[g]
		top := slices.MaxFunc(rows, func(a, b usage.Crossing) int { return cmp.Compare(a.Level, b.Level) })
		n := Notice{Org: g.org, Subject: fmt.Sprintf("crossing %d", top.ID), Mail: s.mail(top, grants[g.org])}
		for _, c := range rows {
			n.Rows = append(n.Rows, c.ID)
		}
		out = append(out, n)
	}
	return out, nil
}

// Mailed implements Recorder: the crossings told are marked in the
// transaction that enqueues their mails.
func (Quota) Mailed(ctx context.Context, tx pgx.Tx, n Notice) error {
	_, err := usage.MarkCrossingsMailed(ctx, tx, n.Rows)
	return err
}

// mail is the words of a crossing: the figures in force (the limit, the
// window, whether a grant or the tier set them), the key when counted per
// key (its id, never the key), and what follows at 100 %.
func (s Quota) mail(c usage.Crossing, g keystore.Grant) Content {
	org := cmp.Or(g.Org, c.OrgID)
	what, unit := "request quota", "requests"
	granted := g.Requests > 0
	if c.Kind == usage.KindCost {
		what, unit, granted = "cost budget", "cost points", g.Cost > 0
	}
	granted = granted && !c.CrossedAt.Before(g.CreatedAt) && c.CrossedAt.Before(g.Until)
	used := fmt.Sprintf("%d %%", c.Level)
	if c.Level >= usage.Level100 {
		used = "all"
	}
	end := c.WindowStart.Add(c.Window)
	paras := []string{
		fmt.Sprintf("The API keys of the organization %s (id %s) used %s of its %s of %d %s %s (policy %s), in the window from %s to %s.",
			org, c.OrgID, used, what, c.Limit, unit, per(c.Window), clip(c.Policy, 100),
			c.WindowStart.Format("2 January 2006 15:04"), end.Format("15:04 UTC")),
	}
	if c.KeyID != "" {
		paras = append(paras, "It is counted for each key; this is the key "+c.KeyID+".")
	}
	if granted {
		paras = append(paras, fmt.Sprintf("These figures are your organization's grant, in force until %s; after it your tier's apply.",
			g.Until.Format("2 January 2006 15:04 UTC")))
	} else {
		paras = append(paras, "These figures are your tier's.")
	}
	if c.Level >= usage.Level100 {
		paras = append(paras, "Further requests in this window are refused with 429 until it ends. Ask your operator for a larger "+
			"tier or a grant if this recurs.")
	} else {
		paras = append(paras, "At 100 % further requests in this window are refused with 429 until it ends.")
	}
	paras = append(paras, "You receive this mail because you are an admin of the organization.")
	return Content{
		Title: fmt.Sprintf("Your organization %s used %s of its %s this window", clip(org, 100), used, what),
		Paras: paras,
		Link:  consoleLink(s.SiteURL, c.OrgID, "usage"),
	}
}

// per is a window as the mail words it: "per minute", "per 10 minutes".
func per(w time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if w >= u.d && w%u.d == 0 {
			if w == u.d {
				return "per " + u.name
			}
			return fmt.Sprintf("per %d %ss", w/u.d, u.name)
		}
	}
	return "per " + w.String()
}
