package auth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// bins holds the civicgate binary of the multi-instance test, built once per
// test binary (or once per `make test` run: stack.SharedBinDirEnv); under
// -race it is a race build, so the second instance is checked for races too.
var bins stack.Binaries

// TestMain removes the binaries built for the multi-instance test.
func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// startBinaryGateway runs the built civicgate as a separate process.
func startBinaryGateway(t *testing.T, dsn string) (base string) {
	t.Helper()
	return startBinaryGatewayWith(t, dsn, "", "tier enterprise 1000/m bills", "")
}

// startBinaryGatewayWith is startBinaryGateway with more global options,
// the civic_auth tier lines and routes before the site's catch-all.
func startBinaryGatewayWith(t *testing.T, dsn, globals, tiers, routes string) (base string) {
	t.Helper()
	bins.BuildCivicgate(t)
	bin := bins.Civicgate
	dir := t.TempDir()
	port, admin := testenv.FreePort(t), testenv.FreePort(t)
	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	civic_auth {
		keys postgres {env.DATABASE_URL}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		cache_ttl 1m
		%s
	}
	%s
}
http://localhost:%d {
	%s
	route {
		civic_auth
		respond "second ok"
	}
}
`, admin, port, testenv.FreePort(t), tiers, globals, port, routes)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "CIVIC_IDENTITY_SECRET="+testSecret, "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var logs bytes.Buffer
	var logsMu sync.Mutex
	cmd.Stdout = &lockedWriter{w: &logs, mu: &logsMu}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			logsMu.Lock()
			t.Logf("second gateway output:\n%s", logs.String())
			logsMu.Unlock()
		}
	})
	base = fmt.Sprintf("http://localhost:%d", port)
	testenv.Eventually(t, 30*time.Second, "the second gateway to answer", func() error {
		select {
		case <-done:
			logsMu.Lock()
			defer logsMu.Unlock()
			t.Fatalf("second gateway exited:\n%s", logs.String())
		default:
		}
		res, err := httpGetQuiet(base + "/")
		if err != nil {
			return err
		}
		if res != `{"error":"Missing bearer token"}` {
			return fmt.Errorf("it answers %q", res)
		}
		return nil
	})
	return base
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRevocationSeenBySecondInstance: two gateways (in-process and a separate
// civicgate process) with 1-minute cache TTLs share one database; revocation
// and rotation must reach both through NOTIFY, well before the TTL
// (notifyWithin).
func TestRevocationSeenBySecondInstance(t *testing.T) {
	dsn, pool := migratedDB(t)
	g := startGateway(t, dsn, "1m")
	second := startBinaryGateway(t, dsn)
	ctx := context.Background()

	k := issue(t, pool, "acme", "enterprise", "live")
	k2 := issue(t, pool, "acme", "enterprise", "live")
	for _, key := range []string{k.Key, k2.Key} {
		if got := get(t, second+"/x", "Authorization", "Bearer "+key); got.status != 200 || got.body != "second ok" {
			t.Fatalf("second: %d %q", got.status, got.body)
		}
		if got := get(t, g.base+"/bills", "Authorization", "Bearer "+key); got.status != 200 {
			t.Fatalf("first: %d %q", got.status, got.body)
		}
	}

	if _, err := keystore.Revoke(ctx, pool, k.ID); err != nil {
		t.Fatal(err)
	}
	// Both gateways are polled at once, each from the revocation's commit.
	t.Run("revocation", func(t *testing.T) {
		for name, url := range map[string]string{"second instance": second + "/x", "in-process": g.base + "/bills"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				took := awaitBody(t, url, k.Key, bodyRevoked, notifyWithin)
				t.Logf("revocation visible after %s", took)
			})
		}
	})
	if t.Failed() {
		return
	}

	// Rotation retires k2 (the oldest live key) everywhere too.
	if _, err := keystore.Rotate(ctx, pool, keystore.RotateSpec{Org: "acme", Env: "live"}); err != nil {
		t.Fatal(err)
	}
	took := awaitBody(t, second+"/x", k2.Key, bodyRotated, notifyWithin)
	t.Logf("rotation visible on the second instance after %s", took)
}
