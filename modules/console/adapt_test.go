package console

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func site(body string) string { return "console.example.org {\ncivic_console {\n" + body + "\n}\n}" }

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"unknown option":       {site("databse x"), `civic_console: unknown option "databse"`},
		"database twice":       {site("database a\ndatabase b"), "database"},
		"idle not a duration":  {site("idle_timeout soon"), "idle_timeout"},
		"tier without rate":    {site("tier free bills"), "civic_console: tier free"},
		"tier twice":           {site("tier free 1/m bills\ntier free 2/m bills"), "tier free given twice"},
		"map unknown kind":     {site("oidc {\nmap header x acme admin\n}"), "want `email_domain <domain> <org> <role>`"},
		"map bad role":         {site("oidc {\nmap email_domain example.org acme owner\n}"), `role "owner" is not viewer, admin or operator`},
		"operator needs *":     {site("oidc {\nmap claim groups ops acme operator\n}"), "organization * goes with the operator role"},
		"* needs operator":     {site("oidc {\nmap claim groups ops * admin\n}"), "organization * goes with the operator role"},
		"map too few":          {site("oidc {\nmap email_domain example.org acme\n}"), "want `email_domain"},
		"oidc unknown option":  {site("oidc {\nissuer_url x\n}"), `unknown option "issuer_url"`},
		"max_endpoints zero":   {site("max_endpoints 0"), "max_endpoints"},
		"session_lifetime neg": {site("session_lifetime -1h"), "session_lifetime"},
	})
}
