package bench

import (
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
	"github.com/civicgate/civicgate/internal/testkit/testidp"
	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// The chain of chain_test.go on the access-token path (docs/identity.md): the
// same two routes, the gateway route's civic_auth with a jwt block over an
// identity provider (internal/testkit/testidp), and the request's bearer an RS256
// access token seen before — so gateway − bare is what the civic handlers
// add to a request authenticated by a token, beside BenchmarkChain's key.

// jwtAudience is the chain's jwt audience (a URL: 401s name the metadata).
const jwtAudience = "https://api.civicgate.test/v1"

// startJWTChain loads the chain with a jwt block and returns it with a token
// of tier bench (subject auth0|bench) as its bearer.
func startJWTChain(tb testing.TB) *chain {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	key := testidp.NewKey(tb, "RS256")
	idp := testidp.Start(tb, key)
	idp.SetCacheControl("max-age=86400") // no key set refresh within a run
	issuer := idp.Issuer()
	token := testidp.Sign(key, map[string]any{"iss": issuer, "aud": jwtAudience, "sub": "auth0|bench", "plan": "bench",
		"iat": time.Now().Unix(), "exp": time.Now().Add(24 * time.Hour).Unix(), "jti": testenv.RandomSuffix(8)})
	// The app needs a key store; the file holds one key, never used here.
	keysFile := filepath.Join(tb.TempDir(), "keys.json")
	if _, err := keystore.IssueToFile(keysFile, "bench", "bench", "live"); err != nil {
		tb.Fatal(err)
	}
	_, prefix := testenv.Redis(tb)
	caddyfile := fmt.Sprintf(`{
	admin off
	auto_https off
	persist_config off
	storage file_system %q
	civic_auth {
		keys file %q
		environment live
		identity_secret %q
		tier bench 1000000000/h bills members regulatory_filings federal_budgets lobbying_disclosures changes
		jwt {
			issuer %s
			audience %s
			tier_claim plan
		}
	}
	civic_rate_limit {
		redis redis://%s/0
		key_prefix %q
		on_store_error local # as the chain of chain_test.go: no 500 on a loaded machine
	}
}

http://:%d {
	handle /bare {
		respond `+"`"+`{"data":{}}`+"`"+` 200
	}
	handle /v1/graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			import %q
		}
		respond `+"`"+`{"data":{}}`+"`"+` 200
	}
}
`, filepath.Join(tb.TempDir(), "storage"), keysFile, testenv.RandomSuffix(40), issuer, jwtAudience, testenv.RedisAddr(), prefix,
		testenv.FreePort(tb), shippedFamilies(tb, root))
	return loadChain(tb, caddyfile, token)
}

// BenchmarkJWTChain is BenchmarkChain with an access token: bare route vs
// gateway route, the token cached after the first request.
//
//	go test -run '^$' -bench JWTChain -benchmem -count 5 ./bench/
func BenchmarkJWTChain(b *testing.B) {
	c := startJWTChain(b)
	c.warm(b)
	for _, p := range []string{"/bare", "/v1/graphql"} {
		name := "bare"
		if p != "/bare" {
			name = "gateway_token"
		}
		b.Run(name, func(b *testing.B) {
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				if s := c.serve(w, p); s != http.StatusOK {
					b.Fatalf("status %d", s)
				}
			}
		})
	}
}

// TestJWTGatewayAddedAllocations pins what the civic handlers add to a
// request admitted with a cached access token (docs/performance.md,
// BENCHMARKS.md). civic_auth's token path allocates nothing its key path
// does not (BenchmarkHandlerCachedToken); the one more than
// TestGatewayAddedAllocations' 10 is graphql_guard's search of the body for
// the bearer value, which copies a value over 96 bytes — a token, never a
// key — to the heap (gqlguard/request containsToken).
func TestJWTGatewayAddedAllocations(t *testing.T) {
	c := startJWTChain(t)
	c.warm(t)
	w := &discard{h: http.Header{}}
	allocs := func(p string) float64 {
		return testing.AllocsPerRun(200, func() {
			if s := c.serve(w, p); s != http.StatusOK {
				t.Fatalf("%s: status %d, headers %v", p, s, w.h)
			}
		})
	}
	bare, gw := allocs("/bare"), allocs("/v1/graphql")
	t.Logf("allocations per request with an access token: bare route %.0f, gateway route %.0f, added %.0f", bare, gw, gw-bare)
	if added := gw - bare; added > jwtAddedAllocations {
		t.Errorf("the gateway adds %s allocations per request with a token, want ≤ %d", strconv.FormatFloat(added, 'f', 0, 64), jwtAddedAllocations)
	}
}

// jwtAddedAllocations is the measured count (the key path's is 10).
const jwtAddedAllocations = 11
