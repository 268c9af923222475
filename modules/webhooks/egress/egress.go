// Package egress is the webhook sender's guard against server-side request
// forgery: target URLs are checked when an endpoint is registered, and every
// connection is checked again at dial time, on the address actually dialled
// (after DNS resolution), so a name that resolves to a private address, or
// re-resolves to one later (DNS rebinding), is refused. Redirects are never
// followed and environment proxies are never used.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy says which targets are allowed. The zero value is the production
// policy: https only, public unicast addresses only.
type Policy struct {
	// AllowLoopback (development only) also allows loopback addresses, and
	// plain http to loopback targets.
	AllowLoopback bool
}

// ErrRefused wraps every refusal of a target.
var ErrRefused = errors.New("egress: target refused")

// denied lists special-purpose ranges (IANA special registries) that are never
// dialled, besides what netip classifies as private, loopback, link-local,
// multicast or unspecified.
var denied = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (would reach an IPv4 target unchecked)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (incl. Teredo)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4 (embeds an IPv4 target)
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// CheckAddr reports whether ip may be dialled under p.
func (p Policy) CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return fmt.Errorf("%w: invalid address", ErrRefused)
	case ip.IsLoopback():
		if p.AllowLoopback {
			return nil
		}
		return fmt.Errorf("%w: loopback address %s", ErrRefused, ip)
	case ip.IsUnspecified(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast():
		return fmt.Errorf("%w: special-purpose address %s", ErrRefused, ip)
	}
	for _, pfx := range denied {
		if pfx.Contains(ip) {
			return fmt.Errorf("%w: special-purpose address %s", ErrRefused, ip)
		}
	}
	return nil
}

// CheckURL validates a target URL when an endpoint is registered: absolute
// https (http only to a loopback host when AllowLoopback), a host, no user
// information, no fragment, and no literal address that CheckAddr refuses.
// Host names are checked again at dial time.
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
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: URL has no host", ErrRefused)
	}
	loopbackHost := false
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := p.CheckAddr(ip); err != nil {
			return nil, err
		}
		loopbackHost = ip.Unmap().IsLoopback()
	} else if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		if !p.AllowLoopback {
			return nil, fmt.Errorf("%w: loopback host %s", ErrRefused, host)
		}
		loopbackHost = true
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !(p.AllowLoopback && loopbackHost) {
			return nil, fmt.Errorf("%w: https required", ErrRefused)
		}
	default:
		return nil, fmt.Errorf("%w: https required", ErrRefused)
	}
	return u, nil
}

// control is the net.Dialer Control function: it runs after DNS resolution,
// on the address about to be connected.
func (p Policy) control(_ string, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparseable dial address", ErrRefused)
	}
	return p.CheckAddr(ap.Addr())
}

// Client returns an HTTP client for deliveries: every dial checked by p, no
// proxy, no redirects followed (a 3xx is returned as the response), timeout
// per request.
func (p Policy) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second, Control: p.control}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    min(timeout, 10*time.Second),
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Refused reports whether err is (or wraps) a refusal by the guard.
func Refused(err error) bool { return errors.Is(err, ErrRefused) }

// dialContext is exposed for tests of the dial-time check.
func (p Policy) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: p.control}
	return d.DialContext(ctx, network, addr)
}
