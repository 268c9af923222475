package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestGatewayOnTLSRedisWithACLUser: Redis on TLS only, with a certificate
// from a test CA and one ACL user (no dangerous commands, the default user
// off). A gateway whose REDIS_URL is rediss://user:password@…?tls_ca_file=
// admits requests and counts them in Redis: the rate limiter's keys appear
// under its prefix, every Redis call succeeds. A second gateway of the same
// deployment with a wrong password still serves (on_store_error local), its
// log names the cause ("auth"), and no log of either holds either password.
func TestGatewayOnTLSRedisWithACLUser(t *testing.T) {
	t.Parallel()
	tl := testenv.StartRedisTLS(t)
	a := startGateways(t, 1, tl.URL())[0]
	wrongPassword := "wrong-" + testenv.RandomSuffix(12)
	u, err := url.Parse(tl.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(tl.Username, wrongPassword)
	b := stack.New(t, &bins)
	for _, name := range sharedEnv {
		b.Setenv(name, a.Getenv(name))
	}
	b.Setenv("REDIS_URL", u.String())
	b.StartGateway("caddyfile/Caddyfile.local")

	key, id := a.IssueKey("tlsco", "enterprise", "live")
	for i := range 30 {
		if resp, body := do(t, a, http.MethodGet, "/bills?limit=1", key, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d through the gateway on TLS Redis: %d %s", i, resp.StatusCode, body)
		}
	}
	if calls, errs := metricSum(t, []*stack.Stack{a}, "civicgate_ratelimit_redis_calls_total"),
		metricSum(t, []*stack.Stack{a}, "civicgate_ratelimit_store_errors_total"); calls == 0 || errs != 0 {
		t.Fatalf("gateway on TLS Redis: %v Redis calls, %v store errors; want some calls and no error", calls, errs)
	}
	prefix := a.Getenv("CIVICGATE_RL_PREFIX")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var found []string
	iter := tl.Client().Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if k := iter.Val(); strings.HasPrefix(k, prefix+"{"+id+"}") {
			found = append(found, k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatalf("no rate-limit key %s{%s}… in the TLS Redis", prefix, id)
	}

	key2, _ := a.IssueKey("tlswrongco", "enterprise", "live")
	for i := range 10 {
		if resp, body := do(t, b, http.MethodGet, "/bills?limit=1", key2, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d through the gateway with a wrong Redis password: %d %s", i, resp.StatusCode, body)
		}
	}
	stack.WaitFor(t, 30*time.Second, `the wrong-password gateway's log to name the cause "auth"`, func() error {
		for _, path := range b.Logs {
			if !strings.Contains(path, "civicgate") {
				continue
			}
			log, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(log), `"cause":"auth"`) {
				return nil
			}
		}
		return fmt.Errorf(`no "cause":"auth" in %v`, b.Logs)
	})
	for _, s := range []*stack.Stack{a, b} {
		s.CheckLogs(t, tl.Password, wrongPassword, key, key2)
	}
}
