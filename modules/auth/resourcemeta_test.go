package auth

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestResourceMetadataDocument: civic_resource_metadata answers GET and HEAD
// with the RFC 9728 document of the jwt block — resource the audience,
// authorization_servers the issuer, the scopes of scope_tier and
// require_scope, bearer tokens in the header — publicly, and anything else
// with 405.
func TestResourceMetadataDocument(t *testing.T) {
	g := startTokenGateway(t, tokenGatewayConfig{})
	url := g.base + "/.well-known/oauth-protected-resource/v1"
	want := `{"resource":"https://api.civicgate.test/v1","authorization_servers":["` + g.idp.Issuer() +
		`"],"scopes_supported":["changes:read"],"bearer_methods_supported":["header"],"resource_name":"Civic Records API"}`
	got := get(t, url)
	if got.status != 200 || got.body != want {
		t.Fatalf("GET: %d %q, want %q", got.status, got.body, want)
	}
	for name, v := range map[string]string{"Content-Type": "application/json", "Cache-Control": "public, max-age=3600",
		"Content-Length": fmt.Sprint(len(want))} {
		if got.header.Get(name) != v {
			t.Errorf("%s %q, want %q", name, got.header.Get(name), v)
		}
	}

	head, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != 200 || head.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD: %d %v", head.StatusCode, head.Header)
	}

	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, err := http.NewRequest(method, url, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 405 || string(body) != `{"error":"Method Not Allowed"}` || res.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s: %d %q, Allow %q", method, res.StatusCode, body, res.Header.Get("Allow"))
		}
	}
}

// TestResourceMetadataScopesAndChallenge: the scopes are those of the
// scope_tier and require_scope lines, sorted, each once; an audience that is
// no URL names no metadata in the challenge unless resource_metadata does.
func TestResourceMetadataScopesAndChallenge(t *testing.T) {
	idpKeys()
	p := newTokenIdP(t, idpRSAKey)
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if _, err := keystore.IssueToFile(keysFile, "acme", "free", "live"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ option, challenge string }{
		{"", `Bearer realm="civicgate"`},
		{"resource_metadata https://meta.example.com/civic", `Bearer realm="civicgate", resource_metadata="https://meta.example.com/civic"`},
	} {
		port := testenv.FreePort(t)
		cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	civic_auth {
		keys file %s
		environment live
		identity_secret %s
		tier free 30/m bills members
		tier enterprise 1000/m bills members changes
		jwt {
			issuer %s
			audience civic-api
			scope_tier b:read free
			scope_tier a:read enterprise
			require_scope changes a:read
			require_scope bills c:read
			%s
		}
	}
}
http://localhost:%[2]d {
	handle /.well-known/oauth-protected-resource* {
		civic_resource_metadata
	}
	handle {
		civic_auth
		respond "ok"
	}
}
`, adminPort, port, testenv.FreePort(t), keysFile, testSecret, p.Issuer(), c.option)
		caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
		base := fmt.Sprintf("http://localhost:%d", port)
		want := `{"resource":"civic-api","authorization_servers":["` + p.Issuer() + `"],"scopes_supported":["a:read","b:read","c:read"],"bearer_methods_supported":["header"]}`
		if got := get(t, base+"/.well-known/oauth-protected-resource"); got.status != 200 || got.body != want {
			t.Fatalf("%d %q, want %q", got.status, got.body, want)
		}
		expectTokenRefusal(t, get(t, base+"/"), 401, `{"error":"Missing bearer token"}`, c.challenge)
		claims := p.claims("auth0|x", "", "", time.Hour)
		claims["aud"], claims["scope"] = "civic-api", "openid"
		tok := testidp.Sign(idpRSAKey, claims)
		expectTokenRefusal(t, get(t, base+"/", "Authorization", "Bearer "+tok), 403, `{"error":"Access token grants no tier"}`,
			c.challenge+`, error="insufficient_scope", error_description="Access token grants no tier"`)
	}
}

// TestResourceMetadataProvisionErrors: without a jwt block there is no
// authorization server to name, without the civic_auth app no block at all:
// each a provision error saying so.
func TestResourceMetadataProvisionErrors(t *testing.T) {
	site := "\n:0 {\n\thandle /.well-known/oauth-protected-resource* {\n\t\tcivic_resource_metadata\n\t}\n}\n"
	for name, c := range map[string]struct{ cfg, want string }{
		"no jwt block": {"{\n\tadmin off\n\tcivic_auth {\n\t\tkeys postgres postgres://nobody@127.0.0.1:1/none\n\t\tenvironment live\n\t\tidentity_secret " +
			testSecret + "\n\t\ttier free 30/m bills\n\t}\n}" + site, "civic_resource_metadata: civic_auth has no jwt block: there is no authorization server to name"},
		"no civic_auth": {"{\n\tadmin off\n}" + site, "civic_resource_metadata: the civic_auth global option (app) must be configured"},
	} {
		t.Run(name, func(t *testing.T) {
			err := provisionCaddyfile(t, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"unknown option": {directive("civic_resource_metadata {\nresource_nam x\n}"), `civic_resource_metadata: unknown option "resource_nam"`},
		"argument":       {directive("civic_resource_metadata extra"), "wrong argument count or unexpected line ending after 'extra'"},
	})
}
