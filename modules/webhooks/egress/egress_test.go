package egress

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckAddr(t *testing.T) {
	refused := []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "fe80::1",
		"0.0.0.0", "::", "100.64.0.1", "224.0.0.1", "255.255.255.255", "fc00::1", "fd12::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::", "192.0.2.1", "198.18.0.1", "2001:db8::1", "ff02::1"}
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
	if err := dev.CheckAddr(netip.MustParseAddr("10.0.0.1")); !Refused(err) {
		t.Error("dev option allowed a private address")
	}
}

func TestCheckURL(t *testing.T) {
	ok := []string{"https://example.org/hook", "https://93.184.215.14:8443/x?y=1"}
	bad := []string{"http://example.org/hook", "ftp://example.org", "https://user:pw@example.org/", "https://127.0.0.1/",
		"https://[::1]/", "https://localhost/", "https://10.0.0.1/", "https://example.org/#frag", "/relative", "https:///nohost",
		"https://169.254.169.254/latest/meta-data", "http://localhost:8080/"}
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
