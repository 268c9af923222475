package egress

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckAddr(t *testing.T) {
	refused := []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "fe80::1",
		"0.0.0.0", "::", "100.64.0.1", "224.0.0.1", "255.255.255.255", "fc00::1", "fd12::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::", "192.0.2.1", "198.18.0.1", "2001:db8::1", "ff02::1",
		// IPv4-compatible (::/96), IPv4-mapped (every one, even of a public
		// address: the dialer never produces them) and IPv4-translated forms.
		"::127.0.0.1", "::7f00:1", "::8.8.8.8", "::ffff:8.8.8.8", "::ffff:0:7f00:1", "::ffff:0:808:808", "fe80::1%eth0"}
	for _, s := range refused {
		if err := (Policy{}).CheckAddr(netip.MustParseAddr(s)); !Refused(err) {
			t.Errorf("%s allowed", s)
		}
	}
	for _, s := range []string{"93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"} {
		if err := (Policy{}).CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s refused: %v", s, err)
		}
	}
	dev := Policy{AllowLoopback: true}
	if err := dev.CheckAddr(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("dev loopback refused: %v", err)
	}
	for _, s := range []string{"10.0.0.1", "::127.0.0.1", "::ffff:127.0.0.1"} {
		if err := dev.CheckAddr(netip.MustParseAddr(s)); !Refused(err) {
			t.Errorf("dev option allowed %s", s)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ok := []string{"https://example.org/hook", "https://93.184.215.14:8443/x?y=1"}
	bad := []string{"http://example.org/hook", "ftp://example.org", "https://user:pw@example.org/", "https://127.0.0.1/",
		"https://[::1]/", "https://localhost/", "https://10.0.0.1/", "https://example.org/#frag", "/relative", "https:///nohost",
		"https://169.254.169.254/latest/meta-data", "http://localhost:8080/", "https://example.org:0/", "https://example.org:99999/",
		"https://example.org:0443/"}
	for _, u := range ok {
		if _, err := (Policy{}).CheckURL(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	for _, u := range bad {
		if _, err := (Policy{}).CheckURL(u); !Refused(err) {
			t.Errorf("%s allowed", u)
		}
	}
	dev := Policy{AllowLoopback: true}
	for _, u := range []string{"http://127.0.0.1:9000/h", "http://localhost:9000/h", "https://[::1]/"} {
		if _, err := dev.CheckURL(u); err != nil {
			t.Errorf("dev: %s refused: %v", u, err)
		}
	}
	for _, u := range []string{"http://example.org/", "http://10.0.0.1/"} {
		if _, err := dev.CheckURL(u); !Refused(err) {
			t.Errorf("dev: %s allowed", u)
		}
	}
}

// TestDialTimeRefusal: the guard runs on the address actually dialled, so a
// host name that resolves to loopback is refused although the URL check
// cannot see it, and a real loopback receiver is reached only with the dev
// option. Redirects are returned, not followed.
func TestDialTimeRefusal(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, target := range []string{srv.URL + "/", "http://localhost" + port + "/", "http://[::ffff:127.0.0.1]" + port + "/"} {
		resp, err := (Policy{}).Client(5*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: reached a loopback receiver without the dev option", target)
		}
		if !Refused(err) {
			t.Fatalf("%s: refused for another reason: %v", target, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("receiver saw %d requests", hits.Load())
	}
	c := Policy{AllowLoopback: true}.Client(5 * time.Second)
	resp, err := c.Post(srv.URL+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("dev option: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp, err = c.Post(srv.URL+"/redirect", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits.Load() != 2 {
		t.Fatalf("redirect followed: status %d, hits %d", resp.StatusCode, hits.Load())
	}
	// The raw dialer refuses a private address before any packet is sent.
	if _, err := (Policy{}).dialContext(context.Background(), "tcp", "10.255.255.1:443"); !Refused(err) {
		t.Fatalf("private dial: %v", err)
	}
}

// TestNumericHostSpellingsRefused: the spellings resolvers (inet_aton, Go's
// cgo resolver) read as special addresses are refused at registration with
// the address they mean, in the production and in the development policy;
// a non-canonical spelling of a public address is refused too (it must be
// written in dotted-decimal form), and a host whose last label is a number
// but no address is neither a name nor an address.
func TestNumericHostSpellingsRefused(t *testing.T) {
	cases := []struct{ url, reason string }{
		{"https://127.1/", `loopback address 127.0.0.1:443 (written "127.1")`},
		{"https://2130706433/", `loopback address 127.0.0.1:443 (written "2130706433")`},
		{"https://0x7f000001/", `loopback address 127.0.0.1:443 (written "0x7f000001")`},
		{"https://0177.0.0.1/", `loopback address 127.0.0.1:443 (written "0177.0.0.1")`},
		{"https://0x7f.1/", `loopback address 127.0.0.1:443 (written "0x7f.1")`},
		{"https://127.0.0.1./", `loopback address 127.0.0.1:443 (written "127.0.0.1.")`},
		{"https://10.1/", `special-purpose address 10.0.0.1 (written "10.1")`},
		{"https://0xa9fea9fe/latest", `special-purpose address 169.254.169.254 (written "0xa9fea9fe")`},
		{"https://0/", `special-purpose address 0.0.0.0 (written "0")`},
		{"https://[::ffff:127.0.0.1]/", "IPv4-mapped address ::ffff:127.0.0.1 (write the IPv4 address)"},
		{"https://[::ffff:8.8.8.8]/", "IPv4-mapped address ::ffff:8.8.8.8 (write the IPv4 address)"},
		{"https://[::127.0.0.1]/", "special-purpose address ::7f00:1"},
		{"https://[::ffff:0:127.0.0.1]/", "special-purpose address ::ffff:0:7f00:1"},
		{"https://16843009/", `IPv4 address "16843009" must be written in dotted-decimal form (1.1.1.1)`},
		{"https://1.1.257/", `IPv4 address "1.1.257" must be written in dotted-decimal form (1.1.1.1)`},
		{"https://1.2.3.4.5/", `host "1.2.3.4.5" is neither a name nor an IPv4 address`},
		{"https://256.1.1.1/", `host "256.1.1.1" is neither a name nor an IPv4 address`},
		{"https://example.123/", `host "example.123" is neither a name nor an IPv4 address`},
		{"https://09.1.1.1/", `host "09.1.1.1" is neither a name nor an IPv4 address`},
		{"https://[fe80::1%25eth0]/", "address with a zone"},
	}
	for _, tc := range cases {
		if _, err := (Policy{}).CheckURL(tc.url); !Refused(err) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want a refusal with %q", tc.url, err, tc.reason)
		}
		// With loopback allowed (make up) a loopback spelling is refused for
		// its spelling.
		if _, err := (Policy{AllowLoopback: true}).CheckURL(tc.url); !Refused(err) {
			t.Errorf("loopback allowed: %s accepted", tc.url)
		}
	}
	if _, err := (Policy{AllowLoopback: true}).CheckURL("http://127.1:9000/"); !Refused(err) ||
		!strings.Contains(err.Error(), `must be written in dotted-decimal form (127.0.0.1)`) {
		t.Errorf("loopback allowed, http://127.1:9000/: %v", err)
	}
	// Control: names that merely contain digits, and canonical addresses, pass.
	for _, u := range []string{"https://1.1.1.1/", "https://a1.example/", "https://example.org./", "https://x.0xzz/", "https://[2606:4700:4700::1111]/"} {
		if _, err := (Policy{}).CheckURL(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
}

func TestParseInetAton(t *testing.T) {
	for in, want := range map[string]string{"127.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "0x7f.0.0.1": "127.0.0.1", "127.0.1": "127.0.0.1", "1.2.3.4": "1.2.3.4", "0": "0.0.0.0",
		"0x": "0.0.0.0", "4294967295": "255.255.255.255", "1.0xffffff": "1.255.255.255"} {
		got, ok := ParseInetAton(in)
		if !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1.", "4294967296", "1.2.3.256", "1.16777216", "256.1", "08", "1.2.3.4.5", "-1", "+1", "1_0", "0b1", "a"} {
		if got, ok := ParseInetAton(in); ok {
			t.Errorf("%q parsed as %v", in, got)
		}
	}
}

// TestLoopbackTargetsAndAdminDenied: an explicit loopback allowlist admits
// exactly its host:port pairs (plain http too), and a Deny target (Caddy's
// admin endpoint) is refused at registration and at dial time even when
// every loopback address is allowed; a receiver on it sees nothing.
func TestLoopbackTargetsAndAdminDenied(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))
	other := netip.AddrPortFrom(ap.Addr(), ap.Port()+1)
	listed := Policy{LoopbackTargets: []netip.AddrPort{ap}}
	for _, u := range []string{srv.URL + "/h", "http://localhost:" + strconv.Itoa(int(ap.Port())) + "/h"} {
		if _, err := listed.CheckURL(u); err != nil {
			t.Errorf("listed target %s refused: %v", u, err)
		}
	}
	for _, u := range []string{"http://" + other.String() + "/h", "http://localhost:" + strconv.Itoa(int(other.Port())) + "/h", "https://[::1]/"} {
		if _, err := listed.CheckURL(u); !Refused(err) {
			t.Errorf("unlisted loopback target %s allowed", u)
		}
	}
	resp, err := listed.Client(5*time.Second).Post(srv.URL+"/h", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("listed target: %v", err)
	}
	resp.Body.Close()
	if _, err := listed.dialContext(context.Background(), "tcp", other.String()); !Refused(err) {
		t.Fatalf("unlisted loopback dial: %v", err)
	}

	// The same receiver as Caddy's admin endpoint: refused with every loopback
	// address allowed, by literal, by name and by another loopback address.
	admin := Policy{AllowLoopback: true, Deny: []Target{{netip.MustParsePrefix("127.0.0.0/8"), ap.Port()}, {netip.MustParsePrefix("::1/128"), ap.Port()}}}
	port := strconv.Itoa(int(ap.Port()))
	for _, u := range []string{srv.URL + "/load", "http://localhost:" + port + "/stop", "http://127.0.0.2:" + port + "/", "http://[::1]:" + port + "/"} {
		if _, err := admin.CheckURL(u); !Refused(err) || !strings.Contains(err.Error(), "Caddy's admin endpoint") {
			t.Errorf("admin target %s: %v", u, err)
		}
	}
	before := hits.Load()
	for _, target := range []string{srv.URL + "/load", "http://localhost:" + port + "/stop"} {
		resp, err := admin.Client(5*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: the admin endpoint was reached", target)
		}
		if !Refused(err) {
			t.Fatalf("%s: refused for another reason: %v", target, err)
		}
	}
	if hits.Load() != before {
		t.Fatal("the admin receiver saw a request")
	}
	// Control: another loopback port is still allowed under that policy.
	if _, err := admin.CheckURL("http://127.0.0.1:" + strconv.Itoa(int(other.Port())) + "/"); err != nil {
		t.Fatalf("another port refused: %v", err)
	}
}
