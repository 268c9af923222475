package outbox

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/url"
	"strconv"
	"time"
)

// TLS modes of an SMTP URL's tls parameter.
const (
	TLSStartTLS = "starttls" // plain connection upgraded by STARTTLS, which the server must offer (default)
	TLSImplicit = "implicit" // TLS from the first byte (port 465)
	TLSNone     = "none"     // no TLS: only to a loopback host (a local relay or a test server)
)

// SMTPConfig is a mail server: smtp://user:pass@host:587?tls=starttls.
type SMTPConfig struct {
	Host     string
	Port     int
	TLS      string
	Username string
	Password string
	// ServerName checks the server's certificate (default Host).
	ServerName string
	// RootCAs, when set, replaces the system roots (tests).
	TLSConfig *tls.Config
}

// ParseSMTPURL reads smtp://[user[:pass]@]host[:port][?tls=starttls|implicit|none].
// The port defaults to 587 (465 with implicit TLS). Its errors never repeat
// the URL, which may hold a password.
func ParseSMTPURL(raw string) (SMTPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "smtp" || u.Hostname() == "" || u.Path != "" && u.Path != "/" {
		return SMTPConfig{}, errors.New("outbox: the SMTP URL is not smtp://[user:pass@]host[:port][?tls=starttls|implicit|none]")
	}
	c := SMTPConfig{Host: u.Hostname(), TLS: TLSStartTLS}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return SMTPConfig{}, fmt.Errorf("outbox: the SMTP URL has an unknown parameter %q", k)
		}
	}
	if v := q.Get("tls"); v != "" {
		c.TLS = v
	}
	switch c.TLS {
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if !loopbackHost(c.Host) {
			return SMTPConfig{}, errors.New("outbox: tls=none is only allowed to a loopback host; use starttls or implicit")
		}
	default:
		return SMTPConfig{}, fmt.Errorf("outbox: tls=%q: want starttls, implicit or none", c.TLS)
	}
	c.Port = 587
	if c.TLS == TLSImplicit {
		c.Port = 465
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return SMTPConfig{}, errors.New("outbox: the SMTP URL's port is not a port")
		}
		c.Port = n
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	return c, nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SMTPSender sends through one SMTP server, a connection per mail (mails
// are few: sign-ups, approvals).
type SMTPSender struct {
	Config SMTPConfig
	From   string // the envelope sender (MAIL FROM)
	// Timeout bounds one mail's whole conversation (default 30s).
	Timeout time.Duration
}

// Send delivers msg to to. Its errors name the step and the server's
// answer, never the credentials.
func (s *SMTPSender) Send(ctx context.Context, to string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(max(s.Timeout, 0), 30*time.Second))
	defer cancel()
	c := s.Config
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	tlsConf := c.TLSConfig.Clone()
	if tlsConf == nil {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = cmp.Or(c.ServerName, c.Host)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp: connect %s: %w", addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if c.TLS == TLSImplicit {
		conn = tls.Client(conn, tlsConf)
	}
	client, err := smtp.NewClient(conn, c.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp: greeting: %w", err)
	}
	defer client.Close()
	if err := client.Hello("localhost"); err != nil {
		return fmt.Errorf("smtp: EHLO: %w", err)
	}
	if c.TLS == TLSStartTLS {
		if ok, _ := client.Extension("STARTTLS"); !ok {
			return errors.New("smtp: the server does not offer STARTTLS (tls=starttls)")
		}
		if err := client.StartTLS(tlsConf); err != nil {
			return fmt.Errorf("smtp: STARTTLS: %w", err)
		}
	}
	if c.Username != "" {
		// PlainAuth refuses to send the password over a connection that is
		// neither TLS nor to localhost.
		if err := client.Auth(smtp.PlainAuth("", c.Username, c.Password, c.Host)); err != nil {
			return errors.New("smtp: authentication refused") // the server's answer may echo what was sent
		}
	}
	if err := client.Mail(s.From); err != nil {
		return fmt.Errorf("smtp: MAIL FROM: %w", err)
	}
	if err := client.Rcpt(to); err != nil {
		return fmt.Errorf("smtp: RCPT TO: %w", err)
	}
	w, err := client.Data()
	if err != nil {
		return fmt.Errorf("smtp: DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("smtp: message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp: message refused: %w", err)
	}
	_ = client.Quit() // the mail is accepted: a failed QUIT changes nothing
	return nil
}
