package gqlguard

import (
	"testing"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

// TestCaddyfileErrors: each body, inside a site block, must not adapt.
func TestCaddyfileErrors(t *testing.T) {
	configs := map[string]string{
		"extra argument":      "graphql_guard * extra {\n schema /x\n}",
		"unknown option":      "graphql_guard {\n schema /x\n max_depht 3\n}",
		"bad size":            "graphql_guard {\n max_body lots\n}",
		"zero limit":          "graphql_guard {\n max_depth 0\n}",
		"introspection value": "graphql_guard {\n introspection maybe\n}",
		"family without root": "graphql_guard {\n family bills\n}",
		"duplicate family":    "graphql_guard {\n family a x\n family a y\n}",
		"measure_only arg":    "graphql_guard {\n measure_only yes\n}",
	}
	for name, body := range configs {
		configs[name] = ":8080 {\n" + body + "\nrespond ok\n}"
	}
	adapttest.Refused(t, configs)
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shape with
// valid values must adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, ":8080 {\ngraphql_guard {\n schema /x\n max_depth 3\n max_body 1MiB\n introspection off\n family a x\n measure_only\n}\nrespond ok\n}")
}
