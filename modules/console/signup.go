package console

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/mailapp"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit"
)

// Self-serve sign-up (docs/design.md D74): its configuration, read from a
// `signup { … }` block of civic_console, and what Provision makes of it.

// Sign-up modes.
const (
	SignupOpen    = "open"    // a verified address gets its organization and first key at once
	SignupApprove = "approve" // a verified request waits for an operator (/signups)
	SignupClosed  = "closed"  // no sign-up page (the default)
)

// Default sign-up limits, each counted by the rate limiter's store
// (civic_rate_limit) like the API's quotas.
const (
	DefaultSignupLimitIP      = "5/h"
	DefaultSignupLimitAddress = "3/d"
	DefaultSignupLimitDomain  = "50/d"
)

// SignupConfig is the `signup` block.
type SignupConfig struct {
	Mode     string `json:"mode,omitempty"`      // open, approve or closed (default)
	Tier     string `json:"tier,omitempty"`      // the tier of a sign-up organization's first key
	TermsURL string `json:"terms_url,omitempty"` // the operator's terms, which the person accepts
	APIURL   string `json:"api_url,omitempty"`   // the GraphQL endpoint, for the curl line shown with the key
	SiteURL  string `json:"site_url,omitempty"`  // this console's public URL, for the links in mails
	// The mails go through the civic_mail app's outbox and sender (its
	// global option: from, smtp or folder, max_pending; docs/design.md D82).
	LimitIP      string   `json:"limit_ip,omitempty"`
	LimitAddress string   `json:"limit_address,omitempty"`
	LimitDomain  string   `json:"limit_domain,omitempty"`
	AllowDomains []string `json:"allow_domains,omitempty"`
	DenyDomains  []string `json:"deny_domains,omitempty"`
}

func (h *Handler) signupBlock() caddyopt.Option {
	c := &SignupConfig{}
	return caddyopt.Sub(caddyopt.Block{
		"mode":          caddyopt.String(&c.Mode),
		"tier":          caddyopt.String(&c.Tier),
		"terms_url":     caddyopt.String(&c.TermsURL),
		"api_url":       caddyopt.String(&c.APIURL),
		"site_url":      caddyopt.String(&c.SiteURL),
		"limit_ip":      caddyopt.String(&c.LimitIP),
		"limit_address": caddyopt.String(&c.LimitAddress),
		"limit_domain":  caddyopt.String(&c.LimitDomain),
		"allow_domains": caddyopt.Strings(&c.AllowDomains),
		"deny_domains":  caddyopt.Strings(&c.DenyDomains),
	}).Then(func() { h.Signup = c })
}

// signup is a provisioned sign-up: nil when the mode is closed.
type signup struct {
	SignupConfig
	site    *url.URL
	mail    *mailapp.App // the outbox's sender: enqueue, then Wake
	byIP    *ratelimit.Limit
	byAddr  *ratelimit.Limit
	byDom   *ratelimit.Limit
	allow   map[string]bool
	deny    map[string]bool
	limiter *ratelimit.App
}

// provisionSignup checks the signup block and, unless closed, makes the
// limits and finds the civic_mail app that sends its mails.
func (h *Handler) provisionSignup(ctx caddy.Context, repl *caddy.Replacer) error {
	if h.Signup == nil {
		return nil
	}
	c := h.Signup
	for _, p := range []*string{&c.Mode, &c.Tier, &c.TermsURL, &c.APIURL, &c.SiteURL} {
		*p = repl.ReplaceKnown(*p, "")
	}
	c.Mode = cmp.Or(c.Mode, SignupClosed)
	switch c.Mode {
	case SignupClosed:
		return nil
	case SignupOpen, SignupApprove:
	default:
		return fmt.Errorf("signup: mode %q: want open, approve or closed", c.Mode)
	}
	s := &signup{SignupConfig: *c}
	if !keystore.ValidTier(c.Tier) || (len(h.tiers) > 0 && h.tiers[c.Tier].Name == "") {
		return fmt.Errorf("signup: tier %q is not a configured tier", c.Tier)
	}
	for name, raw := range map[string]string{"terms_url": c.TermsURL, "api_url": c.APIURL} {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("signup: %s must be an http(s) URL", name)
		}
	}
	site, err := url.Parse(c.SiteURL)
	if err != nil || site.Host == "" || (site.Path != "" && site.Path != "/") ||
		(site.Scheme != "https" && (site.Scheme != "http" || !loopbackHost(site.Hostname()))) {
		return fmt.Errorf("signup: site_url must be this console's https://host[:port] (http only on a loopback address): the links in mails point there")
	}
	s.site = site
	mapp, err := ctx.AppIfConfigured("civic_mail")
	switch {
	case errors.Is(err, caddy.ErrNotConfigured):
		return errors.New("signup: mails need the civic_mail global option (from, and smtp or, for development, folder)")
	case err != nil:
		return fmt.Errorf("signup: %w", err)
	}
	s.mail = mapp.(*mailapp.App)
	switch {
	case !s.mail.Sends():
		return errors.New("signup: civic_mail sends nothing: configure its smtp (e.g. smtp {env.CIVICGATE_SMTP_URL}) or, for development, folder")
	case s.mail.DevFolder() && !loopbackHost(site.Hostname()):
		return errors.New("signup: civic_mail's folder is for a development site on a loopback address only (site_url is not); configure smtp")
	}
	app, err := ctx.App("civic_rate_limit")
	if err != nil {
		return fmt.Errorf("signup: the rate limiter: %w", err)
	}
	s.limiter = app.(*ratelimit.App)
	for _, l := range []struct {
		name, raw, def string
		dst            **ratelimit.Limit
	}{
		{"signup-ip", c.LimitIP, DefaultSignupLimitIP, &s.byIP},
		{"signup-address", c.LimitAddress, DefaultSignupLimitAddress, &s.byAddr},
		{"signup-domain", c.LimitDomain, DefaultSignupLimitDomain, &s.byDom},
	} {
		rates, err := contract.ParseRates(cmp.Or(l.raw, l.def))
		if err != nil {
			return fmt.Errorf("signup: %s: %w", l.name, err)
		}
		if *l.dst, err = s.limiter.Limit(l.name, rates); err != nil {
			return fmt.Errorf("signup: %w", err)
		}
	}
	s.allow, s.deny = domainSet(c.AllowDomains), domainSet(c.DenyDomains)
	h.signup = s
	return nil
}

func domainSet(ds []string) map[string]bool {
	if len(ds) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ds))
	for _, d := range ds {
		m[strings.ToLower(strings.TrimPrefix(d, "@"))] = true
	}
	return m
}

// domainAllowed applies the allow and deny lists to an address's domain.
func (s *signup) domainAllowed(domain string) bool {
	if s.deny[domain] {
		return false
	}
	return s.allow == nil || s.allow[domain]
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// link is an absolute URL of the console for a mail.
func (s *signup) link(path string, q url.Values) string {
	u := *s.site
	u.Path, u.RawQuery = path, q.Encode()
	return u.String()
}
