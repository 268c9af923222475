package logredact

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// site puts a log format into a site's log block.
func site(format string) string {
	return ":8080 {\n\tlog {\n\t\tformat " + format + "\n\t}\n\trespond ok\n}"
}

// TestCaddyfileErrors: each bad format block is refused with its message.
func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"argument":        {site("civic_redact json"), "wrong argument count or unexpected line ending after 'json'"},
		"unknown option":  {site("civic_redact {\n\t\t\twrapp json\n\t\t}"), `civic_redact: unknown option "wrapp"`},
		"wrap no encoder": {site("civic_redact {\n\t\t\twrap\n\t\t}"), "wrong argument count or unexpected line ending after 'wrap'"},
		"wrap unknown":    {site("civic_redact {\n\t\t\twrap yaml\n\t\t}"), "module not registered: caddy.logging.encoders.yaml"},
		"wrap twice":      {site("civic_redact {\n\t\t\twrap json\n\t\t\twrap console\n\t\t}"), "civic_redact: wrap given twice"},
		"bad inner":       {site("civic_redact {\n\t\t\twrap json {\n\t\t\t\tnope 1\n\t\t\t}\n\t\t}"), "unrecognized subdirective nope"},
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	for _, format := range []string{"civic_redact", "civic_redact {\n\t\t\twrap json\n\t\t}", "civic_redact {\n\t\t\twrap json {\n\t\t\t\ttime_format iso8601\n\t\t\t}\n\t\t}"} {
		adapttest.Adapts(t, site(format))
	}
}
