package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/accesstoken"
)

const testAudience = "https://api.civicgate.bench/v1"

// startIssuer runs the command with args (plus --listen and --audience)
// until the test ends and returns its issuer URL.
func startIssuer(t *testing.T, args ...string) (string, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var log bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"--listen", "127.0.0.1:0", "--audience", testAudience}, args...), &log, ready)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case url := <-ready:
		return url, &log
	case err := <-done:
		t.Fatalf("run ended before serving: %v\n%s", err, log.String())
	}
	return "", nil
}

func readTokens(t *testing.T, path string) []string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// The gateway's own verifier, pointed at the issuer by discovery, admits
// every token with the claimed tier, organization and subject; tokens are
// distinct and never in the log.
func TestTokensVerifyWithTheGatewaysVerifier(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			dir := t.TempDir()
			warm, once := filepath.Join(dir, "warm"), filepath.Join(dir, "once")
			url, log := startIssuer(t, "--alg", alg, "--subjects", "3", "--tokens", "3", "--out", warm,
				"--first-seen", "4", "--first-seen-out", once, "--plan", "paid", "--org", "acme")
			v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: url, Audience: testAudience,
				Algorithms: []string{alg}, TierClaim: "plan", OrgClaim: "org_id", Tiers: []string{"free", "paid"}})
			if err != nil {
				t.Fatalf("verifier over the issuer: %v", err)
			}
			defer v.Close()
			warmTokens, onceTokens := readTokens(t, warm), readTokens(t, once)
			if len(warmTokens) != 3 || len(onceTokens) != 4 {
				t.Fatalf("%d and %d tokens, want 3 and 4", len(warmTokens), len(onceTokens))
			}
			seen := map[string]bool{}
			for i, tok := range append(warmTokens, onceTokens...) {
				if seen[tok] {
					t.Fatalf("token %d repeats an earlier one", i)
				}
				seen[tok] = true
				if strings.Contains(log.String(), tok) {
					t.Fatal("a token was logged")
				}
				id, err := v.Verify(context.Background(), tok)
				if err != nil {
					t.Fatalf("token %d refused: %v", i, err)
				}
				wantSub := "bench-user-" + string(rune('1'+i%3))
				if id.Tier != "paid" || id.Organization != "acme" || id.Subject != wantSub || id.KeyID != "jwt:sub:"+wantSub {
					t.Fatalf("token %d: identity %+v", i, id)
				}
			}
		})
	}
}

// The key set is served with the max-age asked for; discovery names it.
func TestKeySetCacheControl(t *testing.T) {
	url, _ := startIssuer(t, "--out", filepath.Join(t.TempDir(), "t"), "--jwks-max-age", "90s")
	resp, err := http.Get(url + "/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=90" {
		t.Errorf("Cache-Control %q", cc)
	}
	if !bytes.Contains(body, []byte(`"kty":"RSA"`)) || bytes.Contains(body, []byte(`"d"`)) {
		t.Errorf("key set %s: want the RSA public key only", body)
	}
	resp, err = http.Get(url + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"jwks_uri":"`+url+`/jwks.json"`)) {
		t.Errorf("discovery %s", body)
	}
}

func TestParseFlagsRefusals(t *testing.T) {
	for _, args := range [][]string{
		{"--out", "x"}, // no audience
		{"--audience", "a"},
		{"--audience", "a", "--out", "x", "--listen", "0.0.0.0:0"},
		{"--audience", "a", "--out", "x", "--listen", "example.com:80"},
		{"--audience", "a", "--out", "x", "--first-seen", "5"},
		{"--audience", "a", "--out", "x", "--tokens", "0"},
		{"--audience", "a", "--out", "x", "--alg", "HS256", "--listen", "127.0.0.1:0"},
	} {
		err := run(context.Background(), args, io.Discard, nil)
		if err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
