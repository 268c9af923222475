package accesstoken

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/testidp"
)

// issuerServer serves handlers under an issuer whose path is path; the
// issuer URL is known only once the server runs, so handlers get it.
func issuerServer(t *testing.T, path string, routes map[string]func(issuer string, w http.ResponseWriter)) (issuer string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h := routes[r.URL.Path]; h != nil {
			h(issuer, w)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	issuer = srv.URL + path
	return issuer, hits
}

func serveJSON(v any) func(string, http.ResponseWriter) {
	return func(_ string, w http.ResponseWriter) { _ = json.NewEncoder(w).Encode(v) }
}

func jwksHandler(s testidp.Key) func(string, http.ResponseWriter) {
	return serveJSON(map[string]any{"keys": []any{s.JWK()}})
}

// metadata serves the issuer's metadata naming jwksPath on its origin.
func metadata(jwksPath string) func(string, http.ResponseWriter) {
	return func(issuer string, w http.ResponseWriter) {
		u, _ := url.Parse(issuer)
		u.Path = jwksPath
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": u.String()})
	}
}

func discoveryConfig(issuer string) Config {
	return Config{Issuer: issuer, Audience: testAudience, DefaultTier: "free", Tiers: []string{"free"}}
}

func TestDiscoveryOpenIDConnect(t *testing.T) {
	s := testidp.Key{KID: "a", Signer: rsaA}
	issuer, _ := issuerServer(t, "/realms/civic", map[string]func(string, http.ResponseWriter){
		"/realms/civic/.well-known/openid-configuration": metadata("/realms/civic/certs"),
		"/realms/civic/certs":                            jwksHandler(s),
	})
	v, err := New(context.Background(), discoveryConfig(issuer))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if want := strings.TrimSuffix(issuer, "/realms/civic") + "/realms/civic/certs"; v.JWKSURL() != want {
		t.Fatalf("jwks %s, want %s", v.JWKSURL(), want)
	}
}

// RFC 8414 §3.1: the metadata of an issuer with a path is at
// /.well-known/oauth-authorization-server/<path>, tried when the OpenID
// Connect document is not there.
func TestDiscoveryRFC8414Fallback(t *testing.T) {
	s := testidp.Key{KID: "a", Signer: rsaA}
	issuer, _ := issuerServer(t, "/tenant1/", map[string]func(string, http.ResponseWriter){
		"/.well-known/oauth-authorization-server/tenant1": metadata("/tenant1/keys"),
		"/tenant1/keys": jwksHandler(s),
	})
	v, err := New(context.Background(), discoveryConfig(issuer))
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
}

func TestJWKSURLSkipsDiscovery(t *testing.T) {
	s := testidp.Key{KID: "a", Signer: rsaA}
	issuer, hits := issuerServer(t, "", map[string]func(string, http.ResponseWriter){"/keys": jwksHandler(s)})
	cfg := discoveryConfig(issuer)
	cfg.JWKSURL = issuer + "/keys"
	v, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if hits.Load() != 1 {
		t.Fatalf("%d requests, want the key set's only", hits.Load())
	}
}

func TestDiscoveryRefusals(t *testing.T) {
	s := testidp.Key{KID: "a", Signer: rsaA}
	other, _ := issuerServer(t, "", map[string]func(string, http.ResponseWriter){"/keys": jwksHandler(s)})
	cases := []struct {
		name   string
		routes map[string]func(string, http.ResponseWriter)
		want   string
	}{
		{"no metadata", nil, "status 404"},
		{"issuer differs", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": serveJSON(map[string]string{"issuer": "https://evil.example", "jwks_uri": "https://evil.example/keys"}),
		}, `issuer is "https://evil.example"`},
		{"jwks_uri on another origin", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": func(issuer string, w http.ResponseWriter) {
				_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": other + "/keys"})
			},
		}, "is not on the issuer's origin"},
		{"jwks_uri plain http elsewhere", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": func(issuer string, w http.ResponseWriter) {
				_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": "http://keys.example/keys"})
			},
		}, "plain http only to a loopback host"},
		{"no jwks_uri", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": func(issuer string, w http.ResponseWriter) {
				_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer})
			},
		}, "no jwks_uri"},
		{"redirect", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": func(issuer string, w http.ResponseWriter) {
				w.Header().Set("Location", other+"/.well-known/openid-configuration")
				w.WriteHeader(http.StatusFound)
			},
		}, "redirects are not followed"},
		{"huge document", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": func(issuer string, w http.ResponseWriter) {
				_, _ = w.Write([]byte(`{"issuer":"` + issuer + `","pad":"` + strings.Repeat("x", maxDiscoveryBytes) + `"}`))
			},
		}, "body larger than"},
		{"key set missing", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": metadata("/keys"),
		}, "/keys: status 404"},
		{"key set empty", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": metadata("/keys"),
			"/keys":                             serveJSON(map[string]any{"keys": []any{}}),
		}, "no usable key"},
		{"key set redirect", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": metadata("/keys"),
			"/keys": func(_ string, w http.ResponseWriter) {
				w.Header().Set("Location", other+"/keys")
				w.WriteHeader(http.StatusMovedPermanently)
			},
		}, "redirects are not followed"},
		{"key set huge", map[string]func(string, http.ResponseWriter){
			"/.well-known/openid-configuration": metadata("/keys"),
			"/keys": func(_ string, w http.ResponseWriter) {
				_, _ = w.Write([]byte(`{"keys":[],"pad":"` + strings.Repeat("x", maxJWKSBytes) + `"}`))
			},
		}, "body larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			issuer, _ := issuerServer(t, "", tc.routes)
			_, err := New(context.Background(), discoveryConfig(issuer))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), issuer) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, issuer, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestFetchURLRules(t *testing.T) {
	for _, ok := range []string{
		"https://idp.example", "https://idp.example/realms/x", "http://127.0.0.1:8080", "http://127.9.9.9/x",
		"http://[::1]:9000/", "http://localhost:4444/", "http://LOCALHOST/", "http://[::ffff:127.0.0.1]/",
	} {
		if err := checkFetchURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"http://idp.example", "http://10.0.0.1/", "http://localhost.evil.example/", "http://127.0.0.1.nip.io/",
		"ftp://idp.example", "idp.example", "/relative", "https://user:pass@idp.example", "https://idp.example/#x",
		"http://[fe80::1%25lo]/", "",
	} {
		if err := checkFetchURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
