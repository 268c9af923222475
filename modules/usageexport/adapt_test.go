package usageexport

import (
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func globalCfg(opts string) string {
	return "{\ncivic_usage_export {\n" + opts + "\n}\n}\n:8080 {\nrespond ok\n}\n"
}

const minimal = "database {env.DATABASE_URL}\nsink https://sink.example/events"

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]adapttest.Refusal{
		"unknown":          {globalCfg(minimal + "\nname x"), `civic_usage_export: unknown option "name"`},
		"settle too short": {globalCfg(minimal + "\nsettle 5s"), `civic_usage_export: settle: want a duration of at least 10s, got "5s"`},
		"batch zero":       {globalCfg(minimal + "\nbatch 0"), `civic_usage_export: batch: want an integer from 1 to 10000, got "0"`},
		"batch huge":       {globalCfg(minimal + "\nbatch 10001"), `civic_usage_export: batch: want an integer from 1 to 10000`},
		"interval zero":    {globalCfg(minimal + "\ninterval 0s"), `civic_usage_export: interval: want a duration above zero`},
		"since":            {globalCfg(minimal + "\nsince yesterday"), `civic_usage_export: since:`},
		"auth one arg":     {globalCfg(minimal + "\nauth_header Authorization"), "wrong argument count"},
		"sink twice":       {globalCfg(minimal + "\nsink https://other.example"), "civic_usage_export: sink given twice"},
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, globalCfg(minimal+"\nsettle 10s\nbatch 10000\ninterval 1s\nsince 2026-01-01T00:00:00Z\nauth_header X-Api-Key {env.K}"))
}
