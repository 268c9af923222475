// Package mailapp is the civic_mail app (docs/design.md D82): the one
// sender of the mail outbox (modules/console/outbox) on this instance, and
// the notices round (modules/console/notices). Its workers run between
// Start and Stop; the console's handler only enqueues and wakes it. No state
// survives a reload but the tables: a reload's new app starts its worker
// before the old one stops, and the outbox's SKIP LOCKED claim and the
// notices' primary key make the overlap harmless.
package mailapp

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/console/notices"
	"github.com/civicgate/civicgate/modules/console/outbox"
	"github.com/civicgate/civicgate/modules/webhooks"
)

func init() {
	caddy.RegisterModule(App{})
}

// DefaultNoticeInterval is how often the notices round runs.
const DefaultNoticeInterval = time.Minute

// App is the civic_mail app.
type App struct {
	// Database is the PostgreSQL DSN holding the outbox: the console's
	// (use {env.DATABASE_URL}).
	Database string `json:"database,omitempty"`
	// From is the sender, "Name <addr>" or addr.
	From string `json:"from,omitempty"`
	// SMTP is smtp://user:pass@host:port?tls=starttls|implicit|none (use
	// {env.CIVICGATE_SMTP_URL}). With neither SMTP nor Folder (both may come
	// from unset variables) the app sends nothing and mails no notices.
	SMTP string `json:"smtp,omitempty"`
	// SMTPCA, when set, is a PEM file of certificates trusted for the SMTP
	// server besides the system's (a relay with a private CA); the server's
	// certificate is always verified.
	SMTPCA string `json:"smtp_ca,omitempty"`
	// Folder, instead of SMTP, writes each mail to a file: for a development
	// site only (SiteURL on a loopback address).
	Folder string `json:"folder,omitempty"`
	// SiteURL is the console's public URL, for the links in notices.
	SiteURL string `json:"site_url,omitempty"`
	// MaxPending bounds the unsent mails (default outbox.DefaultMaxPending).
	MaxPending int `json:"max_pending,omitempty"`
	// Interval is how often the worker looks for due mail (default 2s).
	Interval caddy.Duration `json:"interval,omitempty"`
	// Notices, when set, mails organizations' admins (notices.go).
	Notices *NoticesConfig `json:"notices,omitempty"`

	from    *mail.Address
	site    *url.URL
	pool    *pgxpool.Pool
	worker  *outbox.Worker // nil: no sender configured
	runner  *notices.Runner
	every   time.Duration
	dev     bool
	logger  *zap.Logger
	cancel  context.CancelFunc
	running *sync.WaitGroup
}

// NoticesConfig is the `notices` block.
type NoticesConfig struct {
	// KeyExpiry is how long before its expiry a key's admins are told
	// (default 7 days); Off turns that notice off.
	KeyExpiry    caddy.Duration `json:"key_expiry,omitempty"`
	KeyExpiryOff bool           `json:"key_expiry_off,omitempty"`
	// Deprecations, unless false, tells admins of the deprecated fields
	// their operations read.
	Deprecations *bool `json:"deprecations,omitempty"`
	// Quota, unless false, tells admins that their organization used 80 %
	// or all of a quota or cost budget in a window (docs/design.md D82).
	Quota    *bool          `json:"quota,omitempty"`
	Interval caddy.Duration `json:"interval,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "civic_mail", New: func() caddy.Module { return new(App) }}
}

// Provision checks the configuration and builds the (lazily connecting)
// pool, the sender and the notices; nothing runs before Start.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	repl := caddy.NewReplacer()
	for _, p := range []*string{&a.Database, &a.From, &a.SMTP, &a.SMTPCA, &a.Folder, &a.SiteURL} {
		*p = repl.ReplaceKnown(*p, "")
	}
	if a.MaxPending < 0 || a.Interval < 0 {
		return errors.New("civic_mail: negative setting")
	}
	if a.SiteURL != "" {
		u, err := url.Parse(a.SiteURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || (u.Path != "" && u.Path != "/") {
			return errors.New("civic_mail: site_url must be the console's http(s)://host[:port]")
		}
		a.site = u
	}
	var sender outbox.Sender
	switch {
	case a.SMTP != "" && a.Folder != "":
		return errors.New("civic_mail: smtp and folder are exclusive")
	case a.SMTP != "":
		cfg, err := outbox.ParseSMTPURL(a.SMTP)
		if err != nil {
			return fmt.Errorf("civic_mail: %w", err)
		}
		if a.SMTPCA != "" {
			if cfg.TLSConfig, err = trusting(a.SMTPCA); err != nil {
				return fmt.Errorf("civic_mail: smtp_ca: %w", err)
			}
		}
		sender = &outbox.SMTPSender{Config: cfg}
	case a.Folder != "":
		if a.site == nil || !loopbackHost(a.site.Hostname()) {
			return errors.New("civic_mail: folder is for a development site only: set site_url to the console on a loopback address, or configure smtp")
		}
		folder, err := filepath.Abs(a.Folder)
		if err != nil {
			return fmt.Errorf("civic_mail: folder: %w", err)
		}
		logger := a.logger
		sender = &outbox.FolderSink{Folder: folder, Written: func(path string) {
			logger.Info("civic_mail: development mail written (no mail was sent)", zap.String("file", path))
		}}
		a.dev = true
	default:
		if a.Notices != nil {
			a.logger.Info("civic_mail: neither smtp nor folder is set: no mail is sent and no notice is mailed")
		}
		return nil
	}
	var err error
	if a.from, err = mail.ParseAddress(a.From); err != nil || outbox.CheckAddress(a.from.Address) != nil {
		return errors.New("civic_mail: from must be an address (\"Name <addr>\" or addr)")
	}
	if s, ok := sender.(*outbox.SMTPSender); ok {
		s.From = a.from.Address
	}
	if a.Database == "" {
		return errors.New("civic_mail: database is required with smtp or folder (e.g. database {env.DATABASE_URL})")
	}
	cfg, err := pgxpool.ParseConfig(a.Database)
	if err != nil {
		return errors.New("civic_mail: cannot parse the database DSN") // it may hold a password: not echoed
	}
	cfg.MaxConns = 4
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if a.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil { // connects lazily
		return errors.New("civic_mail: cannot open the database pool")
	}
	a.worker = &outbox.Worker{Pool: a.pool, Sender: sender, From: a.from, Interval: time.Duration(a.Interval),
		Logger: a.logger.Named("outbox")}
	return a.provisionNotices()
}

// provisionNotices builds the notices round from the notices block.
func (a *App) provisionNotices() error {
	n := a.Notices
	if n == nil {
		return nil
	}
	if n.KeyExpiry < 0 || n.Interval < 0 {
		return errors.New("civic_mail: notices: negative setting")
	}
	site := ""
	if a.site != nil {
		site = a.site.Scheme + "://" + a.site.Host
	}
	var sources []notices.Source
	if !n.KeyExpiryOff {
		sources = append(sources, notices.KeyExpiry{Within: cmp.Or(time.Duration(n.KeyExpiry), notices.DefaultExpiryWithin), SiteURL: site})
	}
	if n.Deprecations == nil || *n.Deprecations {
		// The webhook notice's bound of operations (docs/design.md D79).
		sources = append(sources, notices.Deprecations{MaxOperations: webhooks.MaxNoticeOperations, SiteURL: site})
	}
	if n.Quota == nil || *n.Quota {
		sources = append(sources, notices.Quota{SiteURL: site})
	}
	a.every = cmp.Or(time.Duration(n.Interval), DefaultNoticeInterval)
	a.runner = &notices.Runner{Pool: a.pool, Sources: sources, MaxPending: a.MaxPending, Now: time.Now,
		Logger: a.logger.Named("notices"), Enqueued: a.Wake}
	return nil
}

// Start starts the outbox's worker and the notices round.
func (a *App) Start() error {
	if a.worker == nil {
		return nil
	}
	a.worker.Start()
	if a.runner != nil {
		ctx, cancel := context.WithCancel(context.Background())
		a.cancel = cancel
		a.running = new(sync.WaitGroup)
		a.running.Go(func() { a.runner.Run(ctx, a.every) })
	}
	return nil
}

// Stop stops the notices round, then the worker after the mail in hand.
func (a *App) Stop() error {
	if a.cancel != nil {
		a.cancel()
		a.running.Wait()
		a.cancel = nil
	}
	if a.worker != nil {
		a.worker.Stop()
	}
	return nil
}

// Cleanup closes the pool.
func (a *App) Cleanup() error {
	if a.pool != nil {
		a.pool.Close()
	}
	return nil
}

// Sends reports whether mail is sent (smtp or folder configured).
func (a *App) Sends() bool { return a.worker != nil }

// DevFolder reports whether mail goes to a development folder.
func (a *App) DevFolder() bool { return a.dev }

// MaxPendingMails is the outbox's bound for outbox.Enqueue.
func (a *App) MaxPendingMails() int { return a.MaxPending }

// Wake makes the worker look for due mail now (a mail was just enqueued);
// it never blocks.
func (a *App) Wake() {
	if a.worker != nil {
		a.worker.Wake()
	}
}

// trusting is a TLS configuration trusting the system's roots and the
// certificates of the PEM file.
func trusting(file string) (*tls.Config, error) {
	pemData, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pemData) {
		return nil, errors.New("no PEM certificate in the file")
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
