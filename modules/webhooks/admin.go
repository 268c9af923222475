package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/civicgate/civicgate/modules/webhooks/egress"
)

// Caddy's admin endpoint must never be a webhook target: a tenant's
// endpoint at http://127.0.0.1:2019/load or /stop would reconfigure or stop
// the gateway. The app denies, at registration and at dial time, the admin
// listeners of the configuration it is provisioned in (its local one and, if
// configured, the remote one) and caddy.DefaultAdminListen (localhost:2019 or
// CADDY_ADMIN: where another Caddy on this host listens by default).

// adminListens returns the admin listen addresses of the configuration ctx
// belongs to. Caddy keeps that configuration in an unexported field of
// caddy.Context and offers no accessor, so it is read by reflection
// (read-only); ok is false when that field is no longer there (a Caddy
// upgrade: TestAdminAddressOfTheRunningConfig fails then), and the caller
// falls back to the default address.
func adminListens(ctx caddy.Context) (listens []string, ok bool) {
	cfg := reflect.ValueOf(ctx).FieldByName("cfg")
	if !cfg.IsValid() || cfg.Kind() != reflect.Pointer || cfg.Type().Elem() != reflect.TypeFor[caddy.Config]() {
		return nil, false
	}
	if cfg.IsNil() {
		return nil, true
	}
	admin := cfg.Elem().FieldByName("Admin")
	if !admin.IsValid() || admin.Type() != reflect.TypeFor[*caddy.AdminConfig]() {
		return nil, false
	}
	if admin.IsNil() { // not configured: the default, which caddy.DefaultAdminListen covers
		return nil, true
	}
	_ = caddy.AdminConfig{Disabled: false, Listen: "", Remote: &caddy.RemoteAdmin{Listen: ""}} // the fields read below exist
	a := admin.Elem()
	if !a.FieldByName("Disabled").Bool() {
		listens = append(listens, a.FieldByName("Listen").String())
	}
	if remote := a.FieldByName("Remote"); !remote.IsNil() {
		l := remote.Elem().FieldByName("Listen").String()
		if l == "" {
			l = caddy.DefaultRemoteAdminListen
		}
		listens = append(listens, l)
	}
	return listens, true
}

// loopbackPrefixes are every loopback address, IPv4 and IPv6: a listener on
// one of them is treated as reachable on all.
func loopbackPrefixes() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// adminTargets turns admin listen addresses into the targets the egress
// guard denies. An empty address is caddy.DefaultAdminListen; unix and fd
// listeners cannot be reached by an HTTP(S) URL and are skipped. A wildcard
// host denies the port on loopback and on every address of this host's
// interfaces (localAddrs); a name is resolved with lookup.
func adminTargets(ctx context.Context, listens []string, localAddrs []netip.Addr,
	lookup func(context.Context, string) ([]netip.Addr, error)) ([]egress.Target, error) {
	repl := caddy.NewReplacer()
	var out []egress.Target
	add := func(port uint16, prefixes ...netip.Prefix) {
		for _, p := range prefixes {
			t := egress.Target{Prefix: p, Port: port}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	for _, l := range append(listens, caddy.DefaultAdminListen) {
		l = repl.ReplaceAll(l, "")
		if l == "" {
			l = caddy.DefaultAdminListen
		}
		na, err := caddy.ParseNetworkAddress(l)
		if err != nil {
			return nil, fmt.Errorf("admin address %q: %w", l, err)
		}
		if na.IsUnixNetwork() || na.IsFdNetwork() || na.StartPort == 0 || na.StartPort > 65535 {
			continue
		}
		port := uint16(na.StartPort)
		host := strings.TrimSuffix(strings.ToLower(na.Host), ".")
		ip, err := netip.ParseAddr(host)
		switch {
		case host == "" || err == nil && ip.IsUnspecified():
			add(port, loopbackPrefixes()...)
			for _, a := range localAddrs {
				add(port, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			}
		case host == "localhost" || strings.HasSuffix(host, ".localhost") || err == nil && ip.Unmap().IsLoopback():
			add(port, loopbackPrefixes()...)
		case err == nil:
			add(port, netip.PrefixFrom(ip.Unmap().WithZone(""), ip.Unmap().BitLen()))
		default:
			ips, err := lookup(ctx, host)
			if err != nil {
				return nil, fmt.Errorf("admin address %q: %w", l, err)
			}
			for _, a := range ips {
				if a.Unmap().IsLoopback() {
					add(port, loopbackPrefixes()...)
				} else {
					add(port, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				}
			}
		}
	}
	return out, nil
}

// interfaceAddrs lists this host's interface addresses (none if they cannot
// be read: loopback is denied anyway).
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// lookupAdminHost resolves an admin listener's host name.
func lookupAdminHost(ctx context.Context, host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving the admin listener: %w", err)
	}
	return ips, nil
}
