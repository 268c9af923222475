package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL validates a target URL when an endpoint is registered: absolute
// https (http only to an allowed loopback target), a host, a port from 1 to
// 65535, no user information, no fragment, and no address that CheckAddrPort
// refuses. A host is read the way resolvers read it: Go and libc (inet_aton)
// also accept IPv4 addresses written with fewer than four parts, in octal or
// in hex (127.1, 2130706433, 0x7f000001, 0177.0.0.1), so every host whose last
// label is a number is taken as an address, and only dotted-decimal IPv4 and
// plain IPv6 literals are accepted (IPv4-mapped ::ffff:a.b.c.d and
// IPv4-compatible ::a.b.c.d forms are refused). Host names are checked again
// at dial time, on the addresses they resolve to.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	if len(raw) > 2048 {
		return nil, fmt.Errorf("%w: URL longer than 2048 bytes", ErrRefused)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: not a URL", ErrRefused)
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: URL must not carry user information, an opaque part or a fragment", ErrRefused)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("%w: https required", ErrRefused)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: URL has no host", ErrRefused)
	}
	port, err := urlPort(u)
	if err != nil {
		return nil, err
	}
	loopback, err := p.checkHost(host, port)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "http" && !loopback {
		return nil, fmt.Errorf("%w: https required", ErrRefused)
	}
	return u, nil
}

// urlPort returns u's port, or the scheme's default.
func urlPort(u *url.URL) (uint16, error) {
	s := u.Port()
	if s == "" {
		if u.Scheme == "http" {
			return 80, nil
		}
		return 443, nil
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("%w: port must be a number from 1 to 65535", ErrRefused)
	}
	return uint16(n), nil
}

// checkHost checks a URL host on port; loopback reports that the host is an
// allowed loopback target (plain http is then allowed too).
func (p Policy) checkHost(host string, port uint16) (loopback bool, err error) {
	if strings.Contains(host, ":") { // an IPv6 literal (the brackets are gone)
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return false, fmt.Errorf("%w: malformed IPv6 address", ErrRefused)
		}
		if ip.Zone() != "" {
			return false, fmt.Errorf("%w: address with a zone", ErrRefused)
		}
		if err := p.CheckAddrPort(netip.AddrPortFrom(ip, port)); err != nil {
			return false, err
		}
		return ip.IsLoopback(), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		if err := p.CheckAddrPort(netip.AddrPortFrom(ip, port)); err != nil {
			return false, err
		}
		return ip.IsLoopback(), nil
	}
	if EndsInNumber(host) {
		ip, ok := ParseInetAton(strings.TrimSuffix(host, "."))
		if !ok {
			return false, fmt.Errorf("%w: host %q is neither a name nor an IPv4 address", ErrRefused, host)
		}
		if err := p.CheckAddrPort(netip.AddrPortFrom(ip, port)); err != nil {
			return false, fmt.Errorf("%w (written %q)", err, host)
		}
		return false, fmt.Errorf("%w: IPv4 address %q must be written in dotted-decimal form (%s)", ErrRefused, host, ip)
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		// localhost names resolve to 127.0.0.1 and ::1.
		for _, ip := range []netip.Addr{netip.IPv6Loopback(), netip.AddrFrom4([4]byte{127, 0, 0, 1})} {
			ap := netip.AddrPortFrom(ip, port)
			for _, t := range p.Deny {
				if t.Contains(ap) {
					return false, fmt.Errorf("%w: %s:%d is Caddy's admin endpoint", ErrRefused, host, port)
				}
			}
		}
		if !p.allowsLoopbackPort(port) {
			return false, fmt.Errorf("%w: loopback host %s:%d", ErrRefused, host, port)
		}
		return true, nil
	}
	return false, nil
}

// EndsInNumber reports whether a host's last label (ignoring one trailing
// dot) is a number as resolvers read one: decimal digits, or 0x followed by
// hex digits. Such a host is an IPv4 address or invalid, never a DNS name
// (the WHATWG URL standard's rule).
func EndsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// ParseInetAton parses an IPv4 address the way inet_aton(3) does: one to four
// dot-separated numbers, each decimal, octal (leading 0) or hex (leading 0x);
// the last fills the remaining bytes (127.1 = 127.0.0.1, 2130706433 =
// 127.0.0.1).
func ParseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, part := range parts {
		base, digits := 10, part
		switch {
		case len(part) >= 2 && (part[:2] == "0x" || part[:2] == "0X"):
			base, digits = 16, part[2:]
			if digits == "" {
				digits = "0"
			}
		case len(part) >= 2 && part[0] == '0':
			base, digits = 8, part[1:]
		}
		if digits == "" || strings.ContainsAny(digits, "+-_") {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
