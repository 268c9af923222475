package outbox_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testmailpit"
	"github.com/civicgate/civicgate/modules/console/outbox"
)

// TestSMTPOverTLS: a server that requires STARTTLS, and one that speaks
// TLS from the first byte, each requiring AUTH, receive the mail over a
// verified connection; a wrong password is refused without the password
// in the error; a certificate the roots do not trust is refused (the
// production code never skips verification); tls=starttls refuses a server
// that does not offer STARTTLS rather than send in the clear.
func TestSMTPOverTLS(t *testing.T) {
	cert, key, caFile := testmailpit.Certificate(t)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	auth := testmailpit.AuthFile(t, "mailer", "s3cret-pass")
	send := func(t *testing.T, c outbox.SMTPConfig, to string) error {
		t.Helper()
		msg, err := outbox.Build(outbox.Message{Kind: "verify", To: to, Subject: "over TLS", Text: "t", HTML: "h"},
			mustAddr("noreply@civicgate.test"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		s := &outbox.SMTPSender{Config: c, From: "noreply@civicgate.test", Timeout: 10 * time.Second}
		return s.Send(t.Context(), to, msg)
	}
	for _, mode := range []string{outbox.TLSStartTLS, outbox.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			mp := testmailpit.StartWith(t, testmailpit.Options{TLSCert: cert, TLSKey: key, AuthFile: auth,
				RequireSTARTTLS: mode == outbox.TLSStartTLS, RequireTLS: mode == outbox.TLSImplicit})
			c := outbox.SMTPConfig{Host: "127.0.0.1", Port: mp.SMTPPort, TLS: mode, Username: "mailer", Password: "s3cret-pass",
				TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
			if err := send(t, c, "ok@example.org"); err != nil {
				t.Fatalf("send: %v", err)
			}
			bad := c
			bad.Password = "wrong-pass"
			if err := send(t, bad, "wrong@example.org"); err == nil || strings.Contains(err.Error(), "wrong-pass") {
				t.Errorf("wrong password: %v", err)
			}
			untrusted := c
			untrusted.TLSConfig = nil // the system roots: the test CA is not among them
			if err := send(t, untrusted, "untrusted@example.org"); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("untrusted certificate: %v", err)
			}
			noAuth := c
			noAuth.Username, noAuth.Password = "", ""
			if err := send(t, noAuth, "anon@example.org"); err == nil {
				t.Error("sent without AUTH to a server that requires it")
			}
			mails := mp.Mails(t)
			if len(mails) != 1 || mails[0].To[0].Address != "ok@example.org" {
				t.Fatalf("mails: %+v", mails)
			}
		})
	}
	t.Run("no STARTTLS offered", func(t *testing.T) {
		mp := testmailpit.Start(t) // plain SMTP
		c := outbox.SMTPConfig{Host: "127.0.0.1", Port: mp.SMTPPort, TLS: outbox.TLSStartTLS}
		if err := send(t, c, "plain@example.org"); err == nil || !strings.Contains(err.Error(), "does not offer STARTTLS") {
			t.Errorf("plain server with tls=starttls: %v", err)
		}
		if n := len(mp.Mails(t)); n != 0 {
			t.Errorf("%d mails sent in the clear", n)
		}
	})
}

func mustAddr(s string) *mail.Address {
	a, err := mail.ParseAddress(s)
	if err != nil {
		panic(err)
	}
	return a
}
