package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzCheckURL: no input panics, and a URL the production policy accepts is
// https, has a host, carries no user information or fragment, and is not a
// literal address that CheckAddr refuses or a localhost name.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.org/hook", "http://example.org/", "https://127.0.0.1/", "https://[::ffff:10.0.0.1]/",
		"https://169.254.169.254/latest", "https://user:pw@example.org/", "https://localhost./x", "https://example.org/#f",
		"https://[64:ff9b::a00:1]/", "https://0x7f.1/", "https:///x", "mailto:a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Policy{}.CheckURL(raw)
		if err != nil {
			if !Refused(err) {
				t.Fatalf("CheckURL(%q): error %v is not a refusal", raw, err)
			}
			return
		}
		host := u.Hostname()
		if u.Scheme != "https" || host == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("CheckURL(%q) accepted %#v", raw, u)
		}
		if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && (Policy{}).CheckAddr(ip) != nil {
			t.Fatalf("CheckURL(%q) accepted the refused address %s", raw, ip)
		}
		if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			t.Fatalf("CheckURL(%q) accepted a loopback name", raw)
		}
	})
}
