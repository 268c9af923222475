package webhooks

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// TestStartRefusedWithAnotherDatabasesKey: a gateway whose secret_key is not
// the one that sealed the database's canary (a second checkout's, a lost
// variable) refuses to start, as Caddy loads it, with a message that names
// the variable and what to do — and not a word of the key; with the key that
// sealed the canary it starts.
func TestStartRefusedWithAnotherDatabasesKey(t *testing.T) {
	db := feedtest.New(t)
	const owner = "the first checkout's sealing key material, 32+ bytes"
	box, err := secretbox.New([]byte(owner))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.New(db.Pool, box).CheckKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CIVIC_WH_TEST_DSN", db.DSN)
	const mine = "a second checkout's sealing key material, 32+ bytes"
	t.Setenv("CIVIC_WH_TEST_SECRET", mine)
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(config(testenv.FreePort(t), testenv.FreePort(t),
		filepath.Join(t.TempDir(), "caddy.log"), "")), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = caddy.Load(cfg, true)
	if err == nil {
		_ = caddy.Stop()
		t.Fatal("started with another database's key")
	}
	for _, want := range []string{"refusing to start", "CIVIC_WEBHOOK_SECRET_KEY (the civic_webhooks secret_key option)",
		"restore the value that sealed them", "civicgate webhooks rekey"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), mine) || strings.Contains(err.Error(), owner) {
		t.Fatal("the key material reached the error")
	}

	t.Setenv("CIVIC_WH_TEST_SECRET", owner)
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("the right key: %v", err)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
}
