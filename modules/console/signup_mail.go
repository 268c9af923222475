package console

import (
	"html/template"
	"net/url"
	"strings"

	"github.com/civicgate/civicgate/modules/console/outbox"
)

// The sign-up mails (docs/design.md D74). None holds a secret but the
// verification or approval link, which works once.

var mailHTML = template.Must(template.New("mail").Parse(`<!doctype html><html><body>
{{range .Paras}}<p>{{.}}</p>{{end}}
{{with .Link}}<p><a href="{{.}}">{{.}}</a></p>{{end}}
</body></html>`))

func buildMail(kind, to, subject string, paras []string, link string) outbox.Message {
	text := strings.Join(paras, "\n\n")
	if link != "" {
		text += "\n\n" + link
	}
	var html strings.Builder
	_ = mailHTML.Execute(&html, map[string]any{"Paras": paras, "Link": link})
	return outbox.Message{Kind: kind, To: to, Subject: subject, Text: text + "\n", HTML: html.String()}
}

func verifyMail(s *signup, to, name, token string) outbox.Message {
	next := "Open the link below within 24 hours to create your organization and see your first API key."
	if s.Mode == SignupApprove {
		next = "Open the link below within 24 hours to confirm your address; an operator then reviews your request."
	}
	return buildMail("verify", to, "Confirm your sign-up", []string{
		"Hello " + name + ",",
		"Someone (we hope you) asked to sign up for API access with this address. " + next,
		"If it was not you, ignore this mail: nothing happens without the link.",
	}, s.link("/signup/verify", url.Values{"token": {token}}))
}

func alreadyMail(s *signup, to string) outbox.Message {
	return buildMail("already", to, "You already signed up", []string{
		"Someone (we hope you) asked to sign up for API access with this address, which already has an organization or a request under review.",
		"An address signs up one organization. To reach yours, ask your operator for a sign-in link. If it was not you, ignore this mail.",
	}, s.link("/signin", nil))
}

func approvedMail(s *signup, to, token string) outbox.Message {
	return buildMail("approved", to, "Your sign-up was approved", []string{
		"Your request for API access was approved.",
		"Open the link below within 24 hours to create your organization and see your first API key. It works once.",
	}, s.link("/signup/verify", url.Values{"token": {token}}))
}

func refusedMail(s *signup, to string) outbox.Message {
	return buildMail("refused", to, "Your sign-up was not approved", []string{
		"Your request for API access was not approved.",
		"The terms of use: " + s.TermsURL,
	}, "")
}
