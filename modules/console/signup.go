package console

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/caddyopt"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/console/outbox"
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
	MailFrom string `json:"mail_from,omitempty"` // "Name <addr>" or addr
	// SMTP is smtp://user:pass@host:port?tls=starttls|implicit|none (use {env.CIVICGATE_SMTP_URL}).
	SMTP string `json:"smtp,omitempty"`
	// MailFolder, instead of SMTP, writes each mail to a file of this folder:
	// for a development site on a loopback address only.
	MailFolder   string   `json:"mail_folder,omitempty"`
	LimitIP      string   `json:"limit_ip,omitempty"`
	LimitAddress string   `json:"limit_address,omitempty"`
	LimitDomain  string   `json:"limit_domain,omitempty"`
	AllowDomains []string `json:"allow_domains,omitempty"`
	DenyDomains  []string `json:"deny_domains,omitempty"`
	// MaxPendingMails bounds the outbox (default outbox.DefaultMaxPending).
	MaxPendingMails int `json:"max_pending_mails,omitempty"`
}

func (h *Handler) signupBlock() caddyopt.Option {
	c := &SignupConfig{}
	return caddyopt.Sub(caddyopt.Block{
		"mode":              caddyopt.String(&c.Mode),
		"tier":              caddyopt.String(&c.Tier),
		"terms_url":         caddyopt.String(&c.TermsURL),
		"api_url":           caddyopt.String(&c.APIURL),
		"site_url":          caddyopt.String(&c.SiteURL),
		"mail_from":         caddyopt.String(&c.MailFrom),
		"smtp":              caddyopt.String(&c.SMTP),
		"mail_folder":       caddyopt.String(&c.MailFolder),
		"limit_ip":          caddyopt.String(&c.LimitIP),
		"limit_address":     caddyopt.String(&c.LimitAddress),
		"limit_domain":      caddyopt.String(&c.LimitDomain),
		"allow_domains":     caddyopt.Strings(&c.AllowDomains),
		"deny_domains":      caddyopt.Strings(&c.DenyDomains),
		"max_pending_mails": caddyopt.Positive(&c.MaxPendingMails),
	}).Then(func() { h.Signup = c })
}

// signup is a provisioned sign-up: nil when the mode is closed.
type signup struct {
	SignupConfig
	from    *mail.Address
	site    *url.URL
	worker  *outbox.Worker
	byIP    *ratelimit.Limit
	byAddr  *ratelimit.Limit
	byDom   *ratelimit.Limit
	allow   map[string]bool
	deny    map[string]bool
	dev     bool // mails go to a folder
	limiter *ratelimit.App
}

// provisionSignup checks the signup block and, unless closed, makes the
// limits and the outbox worker (started by Provision's caller through
// h.signup.worker.Start).
func (h *Handler) provisionSignup(ctx caddy.Context, repl *caddy.Replacer) error {
	if h.Signup == nil {
		return nil
	}
	c := h.Signup
	for _, p := range []*string{&c.Mode, &c.Tier, &c.TermsURL, &c.APIURL, &c.SiteURL, &c.MailFrom, &c.SMTP, &c.MailFolder} {
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
	if s.from, err = mail.ParseAddress(c.MailFrom); err != nil || outbox.CheckAddress(s.from.Address) != nil {
		return fmt.Errorf("signup: mail_from must be an address (\"Name <addr>\" or addr)")
	}
	var sender outbox.Sender
	switch {
	case c.SMTP != "" && c.MailFolder != "":
		return errors.New("signup: smtp and mail_folder are exclusive")
	case c.SMTP != "":
		cfg, err := outbox.ParseSMTPURL(c.SMTP)
		if err != nil {
			return fmt.Errorf("signup: %w", err)
		}
		sender = &outbox.SMTPSender{Config: cfg, From: s.from.Address}
	case c.MailFolder != "":
		if !loopbackHost(site.Hostname()) {
			return errors.New("signup: mail_folder is for a development site on a loopback address only (site_url is not); configure smtp")
		}
		folder, err := filepath.Abs(c.MailFolder)
		if err != nil {
			return fmt.Errorf("signup: mail_folder: %w", err)
		}
		logger := h.logger
		sender = &outbox.FolderSink{Folder: folder, Written: func(path string) {
			logger.Info("console: development mail written (no mail was sent)", zap.String("file", path))
		}}
		s.dev = true
	default:
		return errors.New("signup: configure smtp (e.g. smtp {env.CIVICGATE_SMTP_URL}) or, for development, mail_folder")
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
	s.worker = &outbox.Worker{Pool: h.pool, Sender: sender, From: s.from, Logger: h.logger.Named("outbox")}
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
