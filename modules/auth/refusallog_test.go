package auth

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// TestRefusedKnownKeysAreLogged: a revoked key, a key of a suspended
// organization and a rotated-out key are each logged at info with the key
// id, organization and reason — never the key or its hash — and the log is
// sampled, so a client hammering with a revoked key writes a bounded number
// of lines (docs/design.md D8; such refusals were once counted but never
// logged per key).
func TestRefusedKnownKeysAreLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	idA, keyA := fileIssue(t, path, "acme")
	idB, keyB := fileIssue(t, path, "beta")
	a, _ := fileApp(t, path)
	core, logs := observer.New(zapcore.InfoLevel)
	h := &Handler{app: a, logger: zap.NewNop()}
	h.refusals = refusalLog(zap.New(core))
	call := func(key string) int {
		r := httptest.NewRequest(http.MethodGet, "/v1/graphql", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, r, nextFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		if rec.Code == 0 {
			return http.StatusOK
		}
		return rec.Code
	}
	fileCLI(t, path, "revoke", idA)
	fileCLI(t, path, "suspend", "--org", "beta")
	testenv.EventuallyTrue(t, 20*time.Second, "the keys file's changes to be applied", func() bool {
		return call(keyA) == http.StatusUnauthorized && call(keyB) == http.StatusForbidden
	})
	for range 200 { // hammering: sampled
		call(keyA)
	}
	entries := logs.FilterMessage("API key refused").All()
	reasons := map[string]string{}
	for _, e := range entries {
		f := e.ContextMap()
		reasons[f["key_id"].(string)] = f["reason"].(string)
		if f["org"] == "" {
			t.Fatalf("no organization in %v", f)
		}
	}
	if reasons[idA] != outcomeRevoked || reasons[idB] != outcomeSuspended {
		t.Fatalf("reasons logged %v", reasons)
	}
	if n := len(entries); n > 60 {
		t.Fatalf("%d lines for about 200 refusals in a second or two: not sampled", n)
	}
	for _, e := range entries {
		line := e.Message + " " + strings.Join(func() []string {
			var v []string
			for _, f := range e.Context {
				v = append(v, f.String)
			}
			return v
		}(), " ")
		for _, secret := range []string{keyA, keyB, keystore.HashKey(keyA).String(), keystore.HashKey(keyB).String()} {
			if strings.Contains(line, secret) || strings.Contains(line, secret[len(secret)-20:]) {
				t.Fatal("a key or its hash reached the log")
			}
		}
	}
}
