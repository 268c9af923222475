package webhooks

import (
	"testing"

	"github.com/civicgate/civicgate/internal/adapttest"
)

// TestCaddyfileAdapt runs the golden files in testdata/caddyfile_adapt.
func TestCaddyfileAdapt(t *testing.T) { adapttest.Golden(t) }

func TestCaddyfileErrors(t *testing.T) {
	global := func(body string) string { return "{\ncivic_webhooks {\n" + body + "\n}\n}\n:8080 {\nrespond ok\n}" }
	adapttest.Refused(t, map[string]string{
		"unknown option":      global("databse x"),
		"database no arg":     global("database"),
		"database two args":   global("database a b"),
		"secret_key no arg":   global("secret_key"),
		"deliver bad":         global("deliver maybe"),
		"loopback bad":        global("insecure_allow_loopback yes please"),
		"workers zero":        global("workers 0"),
		"max_in_flight bad":   global("max_in_flight lots"),
		"timeout bad":         global("timeout soon"),
		"duplicate option":    global("workers 1\nworkers 2"),
		"global argument":     "{\ncivic_webhooks extra {\n}\n}\n:8080 {\nrespond ok\n}",
		"directive argument":  ":8080 {\ncivic_webhooks * extra\n}",
		"directive unknown":   ":8080 {\ncivic_webhooks {\npefix /v1\n}\n}",
		"directive prefix":    ":8080 {\ncivic_webhooks {\nprefix v1\n}\n}",
		"directive max bad":   ":8080 {\ncivic_webhooks {\nmax_replay -3\n}\n}",
		"directive org noarg": ":8080 {\ncivic_webhooks {\norg\n}\n}",
	})
}

// TestCaddyfileValidControl guards TestCaddyfileErrors: the same shapes with
// valid values adapt.
func TestCaddyfileValidControl(t *testing.T) {
	adapttest.Adapts(t, "{\ncivic_webhooks {\ndatabase x\nsecret_key k\nworkers 2\ntimeout 5s\ndeliver off\nretention 1h\n}\n}\n:8080 {\ncivic_webhooks {\nprefix /v1\nmax_replay 3\nmax_endpoints 2\norg o\n}\n}")
}
