package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keycmd"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// fileCLI runs `civicgate keys <args> --file path` and returns its output.
func fileCLI(t *testing.T, path string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := keycmd.Run(context.Background(), append(args, "--file", path), &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("keys %s --file: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// fileIssue issues a key into the keys file with the CLI.
func fileIssue(t *testing.T, path, org string) (id, key string) {
	t.Helper()
	out := fileCLI(t, path, "issue", "--org", org, "--tier", "free", "--env", "live")
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Key ID: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(line, "API key: "); ok {
			key = v
		}
	}
	if id == "" || key == "" {
		t.Fatalf("issue printed %q", out)
	}
	return id, key
}

// TestKeyFileWatchedGateway (through Caddy, keys file): every change the CLI
// makes to the file — a new key, revoke, rotate, suspend, resume, delete-org
// — is served without a reload, within the file poll (1 s).
func TestKeyFileWatchedGateway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	idA, keyA := fileIssue(t, path, "acme")
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	t.Setenv("CIVIC_AUTH_TEST_KEYS", path)
	port := testenv.FreePort(t)
	cfg := fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	civic_auth {
		keys file {env.CIVIC_AUTH_TEST_KEYS}
		environment live
		identity_secret {env.CIVIC_AUTH_TEST_SECRET}
		cache_ttl 1m
		negative_cache_ttl 1m
		tier free 30/m bills members
	}
}
http://localhost:%d {
	civic_auth
	respond "{civic.key_id}"
}
`, adminPort, port, testenv.FreePort(t), port)
	caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort}).InitServer(cfg, "caddyfile")
	base := fmt.Sprintf("http://localhost:%d/", port)
	const within = 10 * time.Second

	awaitBody(t, base, keyA, idA, within)
	// Issued while the gateway runs.
	idB, keyB := fileIssue(t, path, "beta")
	awaitBody(t, base, keyB, idB, within)
	// A key added by hand whose hash the gateway cached as unknown (for a
	// minute) before the file changed.
	keyH, err := keystore.NewKey("live")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, get(t, base, "Authorization", "Bearer "+keyH), 401, `{"error":"Invalid API key"}`)
	f, err := keystore.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Keys = append(f.Keys, keystore.FileKey{ID: "key_byhand", OrgID: "org_byhand", OrgName: "byhand", Env: "live", Tier: "free",
		Status: "active", SHA256: keystore.HashKey(keyH).String(), Prefix: keyH[:keystore.PrefixLen], CreatedAt: time.Now()})
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	awaitBody(t, base, keyH, "key_byhand", within)

	fileCLI(t, path, "revoke", idA)
	awaitBody(t, base, keyA, bodyRevoked, within)

	rot := fileCLI(t, path, "rotate", "--org", "beta", "--env", "live", "--overlap", "0")
	idC, keyC := "", ""
	for _, line := range strings.Split(rot, "\n") {
		if v, ok := strings.CutPrefix(line, "Key ID: "); ok {
			idC = v
		}
		if v, ok := strings.CutPrefix(line, "API key: "); ok {
			keyC = v
		}
	}
	awaitBody(t, base, keyB, bodyRotated, within)
	awaitBody(t, base, keyC, idC, within)

	fileCLI(t, path, "suspend", "--org", "beta")
	awaitBody(t, base, keyC, `{"error":"Organization suspended"}`, within)
	fileCLI(t, path, "resume", "--org", "beta")
	awaitBody(t, base, keyC, idC, within)
	fileCLI(t, path, "delete-org", "--org", "beta")
	awaitBody(t, base, keyC, bodyRevoked, within)
}

// fileApp provisions and starts a civic_auth app on the keys file at path,
// polled every 10 ms, with its logs observed.
func fileApp(t *testing.T, path string) (*App, *observer.ObservedLogs) {
	t.Helper()
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	a := &App{
		Keys:           KeysConfig{Source: "file", File: path},
		Environment:    "live",
		IdentitySecret: "{env.CIVIC_AUTH_TEST_SECRET}",
		WatchInterval:  caddy.Duration(time.Minute), // only the file's changes fire watches in time
		Tiers:          map[string]TierConfig{"free": {Rate: "30/m", Families: []string{"bills"}}},
		filePoll:       10 * time.Millisecond,
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	a.logger = zap.New(core)
	startApp(t, a)
	return a, logs
}

// awaitPolls waits until the app has polled its keys file n more times.
func awaitPolls(t *testing.T, a *App, n int64) {
	t.Helper()
	target := a.files.polls.Load() + n
	testenv.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("%d polls of the keys file", n), func() bool {
		return a.files.polls.Load() >= target
	})
}

func problems(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterMessage("keys file unreadable or invalid; keeping the keys last read from it").All()
}

// TestKeyFileBadEditKeepsLastGood: a keys file that becomes invalid or
// disappears while the gateway runs leaves the last good keys in place, and
// is logged once until the file is good again, naming no hash; the file's next good content
// is applied and a key revoked in it ends the exchanges it admitted.
func TestKeyFileBadEditKeepsLastGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	idA, keyA := fileIssue(t, path, "acme")
	a, logs := fileApp(t, path)
	w := watchKey(t, a, keyA)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hashA := keystore.HashKey(keyA).String()

	var f keystore.File
	if err := json.Unmarshal(good, &f); err != nil {
		t.Fatal(err)
	}
	dup := f
	dup.Keys = append(dup.Keys, f.Keys[0])
	dup.Keys[1].ID = "key_copy"
	dupData, err := json.Marshal(dup)
	if err != nil {
		t.Fatal(err)
	}
	for i, bad := range [][]byte{[]byte(`{"keys":[{"id":`), dupData, nil} {
		if bad == nil {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		awaitPolls(t, a, 5)
		if got := len(problems(logs)); got != 1 {
			t.Fatalf("problem %d: %d error logs, want one until the file is good again: %v", i+1, got, problems(logs))
		}
		if rec, err := a.store.lookup(context.Background(), keystore.HashKey(keyA)); err != nil || rec.KeyID != idA {
			t.Fatalf("last good keys not kept: %+v %v", rec, err)
		}
		expectOpen(t, w)
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), hashA) || strings.Contains(fmt.Sprint(e.ContextMap()), keyA) {
			t.Fatalf("a log names the key or its hash: %v", e)
		}
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	awaitPolls(t, a, 5)
	if n := logs.FilterMessage("keys file readable and valid again").Len(); n != 1 {
		t.Fatalf("%d recovery logs, want 1", n)
	}
	// A new problem after the recovery is logged again.
	if err := os.WriteFile(path, []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	awaitPolls(t, a, 5)
	if got := len(problems(logs)); got != 2 {
		t.Fatalf("%d error logs after a second episode, want 2", got)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	fileCLI(t, path, "revoke", idA)
	awaitFired(t, w, contract.MsgKeyRevoked, 10*time.Second)
}

// TestValidateRefusesMissingKeysFile: `caddy validate` (caddy.Validate
// provisions every app) fails on a keys file that is not there, saying so;
// it used to pass, and every key then got 401 with nothing logged.
func TestValidateRefusesMissingKeysFile(t *testing.T) {
	t.Setenv("CIVIC_AUTH_TEST_SECRET", testSecret)
	missing := filepath.Join(t.TempDir(), "keys.json")
	cfg := func(path string) *caddy.Config {
		raw, err := json.Marshal(map[string]any{"keys": map[string]string{"source": "file", "file": path}, "environment": "live",
			"identity_secret": "{env.CIVIC_AUTH_TEST_SECRET}", "tiers": map[string]any{"free": map[string]any{"rate": "30/m"}}})
		if err != nil {
			t.Fatal(err)
		}
		return &caddy.Config{Admin: &caddy.AdminConfig{Disabled: true}, AppsRaw: caddy.ModuleMap{"civic_auth": raw}}
	}
	err := caddy.Validate(cfg(missing))
	if err == nil || !strings.Contains(err.Error(), "keys file "+missing+" does not exist (create it with `civicgate keys issue --file") {
		t.Fatalf("validate of a missing keys file: %v", err)
	}
	fileIssue(t, missing, "acme")
	if err := caddy.Validate(cfg(missing)); err != nil {
		t.Fatalf("validate once the file exists: %v", err)
	}
}

// TestKeyFileSameStatRewrite: a file rewritten in place with content of the
// same size and its modification time set back (as a coarse-grained file
// system would leave it) is still picked up, by its content hash.
func TestKeyFileSameStatRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	_, keyA := fileIssue(t, path, "acme")
	a, _ := fileApp(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	awaitPolls(t, a, 3)
	paid := bytes.Replace(data, []byte(`"tier": "free"`), []byte(`"tier": "paid"`), 1)
	if bytes.Equal(paid, data) {
		t.Fatalf("no tier in %s", data)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(paid, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the same-size rewrite to be applied", func() error {
		rec, err := a.store.lookup(context.Background(), keystore.HashKey(keyA))
		if err != nil {
			return err
		}
		if rec.Tier != "paid" {
			return fmt.Errorf("the key's tier is %q", rec.Tier)
		}
		return nil
	})
}
