package ratelimit

import (
	"testing"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func TestCaddyfileErrors(t *testing.T) {
	adapttest.Refused(t, map[string]string{
		"handler argument":   ":8080 {\ncivic_rate_limit 10/s\n}\n",
		"handler unknown":    ":8080 {\ncivic_rate_limit {\nburst 3\n}\n}\n",
		"handler duplicate":  ":8080 {\ncivic_rate_limit {\nkey a\nkey b\n}\n}\n",
		"handler two values": ":8080 {\ncivic_rate_limit {\nrate 1/s 2/s\n}\n}\n",
		"global unknown":     "{\ncivic_rate_limit {\nredis_url x\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global lease":       "{\ncivic_rate_limit {\nlease lots\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global timeout":     "{\ncivic_rate_limit {\ntimeout soon\n}\n}\n:8080 {\nrespond ok\n}\n",
		"global max_keys":    "{\ncivic_rate_limit {\nmax_keys 0\n}\n}\n:8080 {\nrespond ok\n}\n",
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shape with
// valid values must adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_rate_limit {\nlease 0.02\ntimeout 20ms\nmax_keys 10\n}\n}\n:8080 {\ncivic_rate_limit {\nkey a\nrate 1/s\n}\n}")
}

// TestGlobalOptionOnce: a second civic_rate_limit global block is refused
// instead of silently replacing the first.
func TestGlobalOptionOnce(t *testing.T) {
	adapttest.Refused(t, map[string]string{"twice": "{\ncivic_rate_limit {\nkey_prefix a:\n}\ncivic_rate_limit {\nkey_prefix b:\n}\n}\n:8080 {\nrespond ok\n}"})
}
