package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestHTTPRedirectKeepsTheHTTPSPort: the development Caddyfile's plain-HTTP
// port redirects to the HTTPS port it serves on. Caddy's automatic redirect
// left the port out when it equals https_port (http://localhost:8080/… went
// to https://localhost/…, refused on 443); Caddyfile.local redirects itself.
func TestHTTPRedirectKeepsTheHTTPSPort(t *testing.T) {
	s := stack.New(t, &bins)
	s.Run(bins.Recordsd, "migrate")
	s.Run(bins.Civicgate, "keys", "migrate")
	s.Run(bins.Civicgate, "webhooks", "migrate")
	s.StartGateway("caddyfile/Caddyfile.local")
	httpPort := s.HTTPURL[strings.LastIndex(s.HTTPURL, ":")+1:]
	httpsPort := s.HTTPSURL[strings.LastIndex(s.HTTPSURL, ":")+1:]

	for _, tc := range []struct{ host, path, want string }{
		{"localhost", "/v1/graphql", "https://localhost:" + httpsPort + "/v1/graphql"},
		{"localhost", "/bills?limit=2&congress=118", "https://localhost:" + httpsPort + "/bills?limit=2&congress=118"},
		// Any other Host keeps its name; the HTTPS port then answers it 421 (misdirected.caddy).
		{"127.0.0.1", "/x", "https://127.0.0.1:" + httpsPort + "/x"},
	} {
		req, err := http.NewRequest("GET", "http://127.0.0.1:"+httpPort+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host + ":" + httpPort
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != tc.want {
			t.Errorf("http://%s:%s%s: %d Location %q, want 308 %s", tc.host, httpPort, tc.path,
				resp.StatusCode, resp.Header.Get("Location"), tc.want)
		}
	}

	// The Location works: following it reaches the API site over TLS (no key: 401).
	resp, err := s.Client.Get("https://localhost:" + httpsPort + "/v1/graphql")
	if err != nil {
		t.Fatalf("following the redirect: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the redirect's target answered %d, want 401", resp.StatusCode)
	}
}
