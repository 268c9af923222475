package egress

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// numericPart is one part of an IPv4 address as inet_aton(3) reads it
// (decimal, octal or hex): an oracle written apart from ParseInetAton.
var numericPart = regexp.MustCompile(`^(0[xX][0-9a-fA-F]*|[0-9]+)$`)

// FuzzCheckURL: no input panics, and a URL the production policy accepts is
// https, has a host and a port from 1 to 65535, carries no user information
// or fragment, is not a literal address that CheckAddrPort refuses, not an
// IPv4-mapped or -compatible literal, not a localhost name, and not a host a
// resolver would read as a numeric IPv4 address in any spelling but
// dotted-decimal.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.org/hook", "http://example.org/", "https://127.0.0.1/", "https://[::ffff:10.0.0.1]/",
		"https://169.254.169.254/latest", "https://user:pw@example.org/", "https://localhost./x", "https://example.org/#f",
		"https://[64:ff9b::a00:1]/", "https://0x7f.1/", "https:///x", "mailto:a@b",
		"https://127.1/", "https://2130706433/", "https://0x7f000001/", "https://0177.0.0.1/", "https://[::ffff:127.0.0.1]/",
		"https://[::127.0.0.1]/", "https://127.0.0.1./", "https://16843009/", "https://1.1.1.1:0443/", "https://[fe80::1%25lo]/",
		"https://0/", "https://0x/", "https://1.2.3.4.5/", "https://a.0x1/"} {
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
		port, err := urlPort(u)
		if err != nil || port == 0 {
			t.Fatalf("CheckURL(%q) accepted port %q", raw, u.Port())
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			if (Policy{}).CheckAddrPort(netip.AddrPortFrom(ip, port)) != nil || ip.Is4In6() || ip.Zone() != "" ||
				netip.MustParsePrefix("::/96").Contains(ip) {
				t.Fatalf("CheckURL(%q) accepted the refused address %s", raw, ip)
			}
			return
		}
		if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			t.Fatalf("CheckURL(%q) accepted a loopback name", raw)
		}
		parts := strings.Split(strings.TrimSuffix(host, "."), ".")
		if numericPart.MatchString(parts[len(parts)-1]) {
			t.Fatalf("CheckURL(%q) accepted host %q, which resolvers read as an IPv4 address or refuse", raw, host)
		}
	})
}
