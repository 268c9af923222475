package console

import (
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// repositoryPath matches what only a reader of this repository can follow: a
// file or folder of the checkout (docs/api.md, modules/…, a README) — an
// organization's member has none of them.
var repositoryPath = regexp.MustCompile(`\b(?:docs|modules|backend|internal|cmd|caddyfile|scripts|examples|deploy|e2e|reliability|bench)/[\w.-]|\b[\w-]+\.md\b|\bREADME\b`)

// TestNoRepositoryPathsInPageSources: no template, style sheet or script of
// the console shows a repository path, in branches a page render may not
// take included.
func TestNoRepositoryPathsInPageSources(t *testing.T) {
	for _, files := range []fs.FS{templateFiles, staticFiles} {
		err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(files, name)
			if err != nil {
				return err
			}
			for _, m := range repositoryPath.FindAllString(string(b), -1) {
				t.Errorf("%s shows the repository path %q", name, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoRepositoryPathsInPages: every page template, rendered by the running
// console with real data, shows no repository path, text that comes from Go
// code included.
func TestNoRepositoryPathsInPages(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	endpoint := g.createEndpoint(t, acme.key, "https://example.org/hook")
	admin := g.session(t, acme, keystore.RoleAdmin)
	operator := g.session(t, acme, keystore.RoleOperator)
	o := "/orgs/" + acme.id
	var keyID string
	if err := g.pool.QueryRow(t.Context(), `SELECT id FROM civicgate.api_keys WHERE org_id = $1`, acme.id).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	// Every page template, with a request that renders it.
	pages := []struct {
		template, session, method, path string
		form                            url.Values
		code                            int
	}{
		{"signin", "", http.MethodGet, "/signin", nil, http.StatusOK},
		{"link", "", http.MethodGet, "/signin/link?token=" + strings.Repeat("a", 43), nil, http.StatusOK},
		{"status", admin, http.MethodGet, o + "/no-such-page", nil, http.StatusNotFound},
		{"overview", admin, http.MethodGet, o + "/", nil, http.StatusOK},
		{"keys", admin, http.MethodGet, o + "/keys", nil, http.StatusOK},
		{"revoke", admin, http.MethodGet, o + "/keys/" + keyID + "/revoke", nil, http.StatusOK},
		{"usage", admin, http.MethodGet, o + "/usage", nil, http.StatusOK},
		{"operations", admin, http.MethodGet, o + "/operations", nil, http.StatusOK},
		{"audit", admin, http.MethodGet, o + "/audit", nil, http.StatusOK},
		{"orgs", operator, http.MethodGet, "/orgs", nil, http.StatusOK},
		{"webhooks", admin, http.MethodGet, o + "/webhooks", nil, http.StatusOK},
		// Created: the page shows the signing secret once ("secret").
		{"webhooks", admin, http.MethodPost, o + "/webhooks", form("url", "https://example.org/other", "env", "live"), http.StatusOK},
		{"endpoint", admin, http.MethodGet, o + "/webhooks/" + endpoint, nil, http.StatusOK},
	}
	rendered := map[string]bool{"head": true, "foot": true, "secret": false}
	for _, name := range signupTemplates { // rendered and checked by signup_test.go, on a console with sign-up on
		rendered[name] = true
	}
	for _, p := range pages {
		r := g.consoleDo(t, p.session, p.method, p.path, p.form)
		if r.code != p.code {
			t.Fatalf("%s %s (%s): %d, want %d\n%s", p.method, p.path, p.template, r.code, p.code, r.body)
		}
		rendered[p.template] = true
		rendered["secret"] = rendered["secret"] || strings.Contains(r.body, `class="secret"`)
		for _, m := range repositoryPath.FindAllString(r.body, -1) {
			t.Errorf("%s %s (%s) shows the repository path %q", p.method, p.path, p.template, m)
		}
	}
	tmpl, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range tmpl.Templates() {
		if name := d.Name(); name != "" && !strings.HasSuffix(name, ".html") && !rendered[name] {
			t.Errorf("no request above renders the template %q: add one", name)
		}
	}
}
