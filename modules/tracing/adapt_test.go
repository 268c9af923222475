package tracing

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// site puts directives in a site.
func site(d string) string { return ":8080 {\n" + d + "\n}" }

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"trace edge bad trust":     {site("civic_tracing {\ntrust 10.0.0.0/33\n}"), `civic_tracing: trust: "10.0.0.0/33" is not a CIDR prefix, an address, private_ranges or none`},
		"trace edge no trust":      {site("civic_tracing {\ntrust\n}"), "wrong argument count or unexpected line ending after 'trust'"},
		"trace edge unknown":       {site("civic_tracing {\nspam gateway\n}"), `civic_tracing: unknown option "spam"`},
		"trace edge span twice":    {site("civic_tracing {\nspan a\nspan b\n}"), "civic_tracing: span given twice"},
		"trace upstream argument":  {site("route {\ncivic_trace_upstream extra\nrespond ok\n}"), "wrong argument count or unexpected line ending after 'extra'"},
		"trace upstream an option": {site("route {\ncivic_trace_upstream {\nspan x\n}\nrespond ok\n}"), `civic_trace_upstream: unknown option "span"`},
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, site("civic_tracing {\ntrust none\n}\nroute {\ncivic_trace_upstream\nrespond ok\n}"))
	adapttest.Adapts(t, site("civic_tracing {\nspan edge\ntrust private_ranges 10.0.0.0/8 192.0.2.7\n}"))
	adapttest.Adapts(t, site("civic_tracing"))
}
