package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TierConfig is one tier's policy, as civic_auth takes it: webhooks use the
// families (what an organization's active keys entitle it to receive) and
// accept the rate without using it.
type TierConfig struct {
	// Rate like "100/m" (contract.ParseRate, as civic_auth checks it; not
	// used here).
	Rate string `json:"rate"`
	// Families the tier is entitled to; families that are not change-event
	// families (changes) are ignored.
	Families []string `json:"families,omitempty"`
}

var (
	tierNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	tierFamilyRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// checkTier validates one tier line.
func checkTier(name string, tc TierConfig) error {
	if !tierNameRE.MatchString(name) {
		return fmt.Errorf("tier %q: not a tier name", name)
	}
	if _, err := contract.ParseRates(tc.Rate); err != nil {
		return fmt.Errorf("tier %s: %w", name, err)
	}
	for _, f := range tc.Families {
		if !tierFamilyRE.MatchString(f) {
			return fmt.Errorf("tier %s: family %q is not a family name", name, f)
		}
	}
	return nil
}

// storeTiers validates the tier lines and returns the tier map fan-out and
// claim decide with.
func storeTiers(tiers map[string]TierConfig) (store.Tiers, error) {
	out := make(store.Tiers, len(tiers))
	for name, tc := range tiers {
		if err := checkTier(name, tc); err != nil {
			return nil, err
		}
		out[name] = append([]string{}, tc.Families...)
	}
	return out, nil
}

// errNoTiers is the provisioning error of a delivering app without tiers.
var errNoTiers = errors.New("civic_webhooks: deliver is on but no tier is configured, so no organization would be entitled " +
	"to any delivery: add the same `tier <name> <rate> <families...>` lines as civic_auth inside civic_webhooks " +
	"(`import tiers.caddy` in the shipped Caddyfiles), or set `deliver off`")

// parseLoopbackTargets reads insecure_allow_loopback's host:port pairs: a
// loopback IP literal (IPv6 in brackets) or localhost (127.0.0.1 and ::1),
// and a port from 1 to 65535.
func parseLoopbackTargets(targets []string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, t := range targets {
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			return nil, fmt.Errorf("insecure_allow_loopback %q: want host:port", t)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 || strconv.FormatUint(p, 10) != port {
			return nil, fmt.Errorf("insecure_allow_loopback %q: port must be a number from 1 to 65535", t)
		}
		var ips []netip.Addr
		if strings.EqualFold(host, "localhost") {
			ips = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
		} else if ip, err := netip.ParseAddr(host); err == nil && ip.Zone() == "" && !ip.Is4In6() && ip.IsLoopback() {
			ips = []netip.Addr{ip}
		} else {
			return nil, fmt.Errorf("insecure_allow_loopback %q: the host must be a loopback address or localhost", t)
		}
		for _, ip := range ips {
			out = append(out, netip.AddrPortFrom(ip, uint16(p)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Compare(out[j]) < 0 })
	return out, nil
}
