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
	"slices"
	"syscall"
	"time"
)

// Policy says which targets are allowed. The zero value is the production
// policy: https only, public unicast addresses only.
type Policy struct {
	// AllowLoopback (development only) also allows every loopback address,
	// and plain http to loopback targets.
	AllowLoopback bool
	// LoopbackTargets (development only) allows exactly these loopback
	// host:port pairs, plain http included, when AllowLoopback is off.
	LoopbackTargets []netip.AddrPort
	// Deny lists targets that are never dialled, whatever else allows them:
	// Caddy's admin endpoint (see the civic_webhooks app).
	Deny []Target
}

// Target is one address range on one TCP port.
type Target struct {
	Prefix netip.Prefix
	Port   uint16
}

// Contains reports whether ap is in t (IPv4-mapped addresses as IPv4).
func (t Target) Contains(ap netip.AddrPort) bool {
	return ap.Port() == t.Port && t.Prefix.Contains(ap.Addr().Unmap().WithZone(""))
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
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated; ::127.0.0.1 embeds an IPv4 target)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (would reach an IPv4 target unchecked)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (incl. Teredo)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4 (embeds an IPv4 target)
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),       // segment routing SIDs
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// CheckAddr reports whether ip may be dialled under p, whatever the port
// (a loopback address passes only with AllowLoopback: LoopbackTargets and
// Deny need the port, see CheckAddrPort). IPv4-mapped IPv6 addresses
// (::ffff:a.b.c.d) are refused: the dialer never produces one (Go dials them
// as IPv4), so only a URL spelling an IPv4 address that way meets it.
func (p Policy) CheckAddr(ip netip.Addr) error {
	ip = ip.WithZone("")
	switch {
	case !ip.IsValid():
		return fmt.Errorf("%w: invalid address", ErrRefused)
	case ip.Is4In6():
		return fmt.Errorf("%w: IPv4-mapped address %s (write the IPv4 address)", ErrRefused, ip)
	case ip.IsLoopback():
		if p.AllowLoopback {
			return nil
		}
		return fmt.Errorf("%w: loopback address %s", ErrRefused, ip)
	}
	return checkClass(ip)
}

// checkClass refuses every special-purpose address except loopback.
func checkClass(ip netip.Addr) error {
	switch {
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

// CheckAddrPort reports whether ap may be dialled under p: never a Deny
// target, a loopback address only with AllowLoopback or when listed in
// LoopbackTargets, and no other special-purpose address.
func (p Policy) CheckAddrPort(ap netip.AddrPort) error {
	ip := ap.Addr().WithZone("")
	if ip.Is4In6() {
		return p.CheckAddr(ip)
	}
	for _, t := range p.Deny {
		if t.Contains(ap) {
			return fmt.Errorf("%w: %s is Caddy's admin endpoint", ErrRefused, netip.AddrPortFrom(ip, ap.Port()))
		}
	}
	if ip.IsLoopback() {
		if p.AllowLoopback || slices.Contains(p.LoopbackTargets, netip.AddrPortFrom(ip, ap.Port())) {
			return nil
		}
		return fmt.Errorf("%w: loopback address %s", ErrRefused, netip.AddrPortFrom(ip, ap.Port()))
	}
	return p.CheckAddr(ip)
}

// allowsLoopbackPort reports whether some loopback address is allowed on port.
func (p Policy) allowsLoopbackPort(port uint16) bool {
	if p.AllowLoopback {
		return true
	}
	for _, t := range p.LoopbackTargets {
		if t.Port() == port {
			return true
		}
	}
	return false
}

// control is the net.Dialer Control function: it runs after DNS resolution,
// on the address about to be connected.
func (p Policy) control(_ string, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparseable dial address", ErrRefused)
	}
	return p.CheckAddrPort(ap)
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
