package notices

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// Kinds of the sources below (the outbox's kind of their mails).
const (
	KindKeyExpiry   = "key_expiry"
	KindDeprecation = "deprecation"
)

// DefaultExpiryWithin is how long before its expiry a key's admins are told.
const DefaultExpiryWithin = 7 * 24 * time.Hour

// maxExpiringKeys bounds the keys one round reads: beyond it the soonest
// expiries are mailed first and the rest in later rounds.
const maxExpiringKeys = 10_000

// KeyExpiry tells an organization's admins that one of its active keys
// expires within Within (default 7 days): once per key and expiry (the
// subject is the key's id and expiry, so an expiry that is ever moved and
// comes near again is told again).
type KeyExpiry struct {
	Within  time.Duration
	SiteURL string // the console, for the link to the keys page ("" : no link)
}

// Kind implements Source.
func (KeyExpiry) Kind() string { return KindKeyExpiry }

// Due implements Source through keystore.ExpiringKeys.
func (s KeyExpiry) Due(ctx context.Context, pool *pgxpool.Pool, now time.Time) ([]Notice, error) {
	within := s.Within
	if within <= 0 {
		within = DefaultExpiryWithin
	}
	keys, err := keystore.ExpiringKeys(ctx, pool, now, within, maxExpiringKeys)
	if err != nil {
		return nil, err
	}
	out := make([]Notice, len(keys))
	for i, k := range keys {
		out[i] = Notice{Org: k.OrgID, Subject: k.ID + "@" + k.ExpiresAt.UTC().Format(time.RFC3339), Mail: expiryMail(k, now, s.SiteURL)}
	}
	return out, nil
}

// expiryMail names the key by its prefix (the part `keys list` shows, never
// the secret) and its name.
func expiryMail(k keystore.ExpiringKey, now time.Time, site string) Content {
	days := int(math.Ceil(k.ExpiresAt.Sub(now).Hours() / 24))
	when := fmt.Sprintf("in %d days", days)
	if days == 1 {
		when = "within a day"
	}
	named := "An API key"
	if k.Name != "" {
		named = fmt.Sprintf("The API key %q", k.Name)
	}
	return Content{
		Title: fmt.Sprintf("Your API key of %s expires %s", k.Org, when),
		Paras: []string{
			fmt.Sprintf("%s of the organization %s (id %s, starting %s) expires on %s.", named, k.Org, k.ID, k.Prefix,
				k.ExpiresAt.UTC().Format("Monday 2 January 2006 at 15:04 UTC")),
			"From then on every request with it is refused with 401 \"API key expired\". Issue a new key in the console " +
				"(or ask your operator) and move your programs to it before then; an expiry cannot be extended.",
			"You receive this mail because you are an admin of the organization.",
		},
		Link: consoleLink(site, k.OrgID, "keys"),
	}
}

// Deprecations tells an organization's admins, once per schema coordinate,
// that its operations read a deprecated field: the detection of the
// webhook notice (usage.DeprecatedUsers, docs/design.md D79), its
// operations bounded the same way (MaxOperations: webhooks.MaxNoticeOperations).
type Deprecations struct {
	MaxOperations int
	SiteURL       string
}

// Kind implements Source.
func (Deprecations) Kind() string { return KindDeprecation }

// maxReason bounds the schema's reason as a mail quotes it.
const maxReason = 1000

// Due implements Source: the usage kept (usage.HourRetention) is read.
func (s Deprecations) Due(ctx context.Context, pool *pgxpool.Pool, now time.Time) ([]Notice, error) {
	users, err := usage.DeprecatedUsers(ctx, pool, now.Add(-usage.HourRetention))
	if err != nil {
		return nil, err
	}
	out := make([]Notice, len(users))
	for i, u := range users {
		out[i] = Notice{Org: u.Org, Subject: u.Coordinate, Mail: s.mail(u)}
	}
	return out, nil
}

func (s Deprecations) mail(u usage.DeprecatedUser) Content {
	reason := "The schema gives no reason."
	if u.Reason != "" {
		reason = "The schema's reason: " + clip(u.Reason, maxReason)
	}
	ops := u.Operations
	more := max(0, len(ops)-max(s.MaxOperations, 1))
	ops = ops[:len(ops)-more]
	items := make([]string, len(ops))
	for i, op := range ops {
		name := cmp.Or(op.Name, "(anonymous)")
		items[i] = fmt.Sprintf("%s (%s…): %d requests", clip(name, 100), op.Hash[:min(len(op.Hash), 12)], op.Requests)
	}
	c := Content{
		Title: "A field your API calls use is deprecated: " + clip(u.Coordinate, 120),
		Paras: []string{
			fmt.Sprintf("Operations made with your organization's keys read %s, which the schema marks deprecated. %s",
				u.Coordinate, reason),
			fmt.Sprintf("%d requests since %s read it, through these operations:", u.Requests,
				u.FirstSeen.UTC().Format("2 January 2006 15:04 UTC")),
		},
		Items: items,
		Link:  consoleLink(s.SiteURL, u.Org, "operations"),
	}
	if more > 0 {
		c.More = fmt.Sprintf("and %d more operations.", more)
	}
	return c
}

// clip bounds s to n bytes of valid UTF-8.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// consoleLink is the console page of an organization, or "" without a site.
func consoleLink(site, org, page string) string {
	if site == "" {
		return ""
	}
	return strings.TrimRight(site, "/") + "/orgs/" + url.PathEscape(org) + "/" + page
}
