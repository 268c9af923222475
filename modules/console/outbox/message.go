package outbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is one mail as the outbox keeps it: one recipient, a subject and
// the same text as plain text and HTML (sent as multipart/alternative).
type Message struct {
	Kind    string // what it is, for the operator: verify, approved, refused
	To      string // a bare address (no display name)
	Subject string
	Text    string
	HTML    string
}

// ErrBadHeader is returned for a recipient, sender or subject that is not a
// single line or not an address: nothing that reaches a mail header may hold
// CR or LF (header injection).
var ErrBadHeader = errors.New("outbox: bad mail header value")

// MaxAddressLen bounds an address (RFC 5321's path limit).
const MaxAddressLen = 254

// CheckAddress reports whether s is one bare address of at most
// MaxAddressLen bytes: no display name, no CR, LF or other control character,
// as net/mail parses it back unchanged.
func CheckAddress(s string) error {
	if s == "" || len(s) > MaxAddressLen || strings.ContainsFunc(s, isControl) {
		return ErrBadHeader
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || !strings.Contains(s, "@") {
		return ErrBadHeader
	}
	return nil
}

// isControl is a character no header value may hold (CR and LF among them).
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// check refuses a message whose header values could inject a header.
func (m Message) check() error {
	if err := CheckAddress(m.To); err != nil {
		return fmt.Errorf("%w: recipient", err)
	}
	if m.Subject == "" || len(m.Subject) > 200 || strings.ContainsFunc(m.Subject, isControl) {
		return fmt.Errorf("%w: subject", ErrBadHeader)
	}
	if m.Kind == "" || len(m.Kind) > 32 || strings.ContainsFunc(m.Kind, isControl) {
		return fmt.Errorf("%w: kind", ErrBadHeader)
	}
	return nil
}

// Build writes m as an RFC 5322 message from from (a parsed address, its
// display name encoded by net/mail): headers, then a multipart/alternative
// body of quoted-printable plain text and HTML.
func Build(m Message, from *mail.Address, now time.Time) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if from == nil || CheckAddress(from.Address) != nil || strings.ContainsFunc(from.Name, isControl) {
		return nil, fmt.Errorf("%w: sender", ErrBadHeader)
	}
	var body bytes.Buffer
	mp := multipart.NewWriter(&body)
	for _, part := range []struct{ ctype, text string }{
		{"text/plain; charset=utf-8", m.Text},
		{"text/html; charset=utf-8", m.HTML},
	} {
		w, err := mp.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.ctype},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, fmt.Errorf("outbox: body: %w", err)
		}
		qp := quotedprintable.NewWriter(w)
		if _, err := qp.Write([]byte(strings.ReplaceAll(part.text, "\n", "\r\n"))); err != nil {
			return nil, fmt.Errorf("outbox: body: %w", err)
		}
		if err := qp.Close(); err != nil {
			return nil, fmt.Errorf("outbox: body: %w", err)
		}
	}
	if err := mp.Close(); err != nil {
		return nil, fmt.Errorf("outbox: body: %w", err)
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	_, domain, _ := strings.Cut(from.Address, "@")
	var out bytes.Buffer
	for _, h := range [][2]string{
		{"From", from.String()},
		{"To", (&mail.Address{Address: m.To}).String()},
		{"Subject", mime.QEncoding.Encode("utf-8", m.Subject)},
		{"Date", now.UTC().Format(time.RFC1123Z)},
		{"Message-ID", "<" + hex.EncodeToString(id[:]) + "@" + domain + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mp.Boundary()})},
		{"Auto-Submitted", "auto-generated"},
	} {
		if strings.ContainsAny(h[1], "\r\n") { // defence in depth: every value above is one line
			return nil, fmt.Errorf("%w: %s", ErrBadHeader, h[0])
		}
		out.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	out.WriteString("\r\n")
	out.Write(body.Bytes())
	return out.Bytes(), nil
}
