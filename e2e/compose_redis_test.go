package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/civicgate/civicgate/internal/redisconn"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestComposeRedisACL runs redis-server with the exact command docker-compose.yml
// gives it (the password from the environment, the default user off, one
// `civicgate` user limited to civicgate:* keys and no dangerous command) and
// puts a real gateway's limiter on it with the REDIS_URL the compose file
// builds: the ACL must refuse strangers and dangerous commands, yet let the
// limiter work — through Redis itself, not the local fallback that
// `on_store_error local` would quietly switch to (docs/security.md
// "Deployment"; finding 8 of its "Review of 2026-11").
func TestComposeRedisACL(t *testing.T) {
	s := stack.New(t, &bins)
	c := readCompose(t, s.Root)
	cmd := c.Services["redis"].Command
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		t.Fatalf("redis command is not [sh -c …]: %q", cmd)
	}
	// Compose turns $$ into $; sh then expands the password from the environment.
	script := strings.ReplaceAll(cmd[2], "$$", "$")
	port := testenv.FreePort(t)
	dir := t.TempDir()
	password := testenv.RandomSuffix(16)
	script += " --port " + strconv.Itoa(port) + " --bind 127.0.0.1 --dir " + dir
	srv := exec.Command("sh", "-c", script)
	srv.Env = append(os.Environ(), "REDIS_PASSWORD="+password)
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait(); _ = logf.Close() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx := context.Background()

	user := redis.NewClient(&redis.Options{Addr: addr, Username: "civicgate", Password: password})
	defer user.Close()
	stack.WaitFor(t, 10*time.Second, "redis-server with the compose ACL", func() error {
		return user.Ping(ctx).Err()
	})
	stranger := redis.NewClient(&redis.Options{Addr: addr})
	defer stranger.Close()
	if err := stranger.Set(ctx, "civicgate:x", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("without credentials: %v, want NOAUTH", err)
	}
	if err := user.Set(ctx, "other:x", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("key outside civicgate:*: %v, want NOPERM", err)
	}
	for _, args := range [][]any{{"FLUSHALL"}, {"KEYS", "*"}, {"CONFIG", "GET", "requirepass"}, {"ACL", "LIST"}, {"FLUSHDB"}} {
		if err := user.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v: %v, want NOPERM", args, err)
		}
	}

	// The gateway's limiter on this Redis, with the compose file's URL form.
	url := strings.NewReplacer("${REDIS_PASSWORD:?set in deploy.env}", password, "@redis:6379", "@"+addr).
		Replace(c.Services["gateway-1"].Environment["REDIS_URL"])
	s.Setenv("REDIS_URL", url)
	prefix := "civicgate:rl:" + testenv.RandomSuffix(4) + ":"
	s.Setenv("CIVICGATE_RL_PREFIX", prefix)
	s.Prepare()
	s.StartRecordsd()
	s.StartGateway("caddyfile/Caddyfile.local")
	free, _ := s.IssueKey("aclco", "free", "live")
	testRateLimit(t, s, free)
	var keys []string
	iter := user.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatalf("the limiter wrote nothing under %s: it did not reach Redis through the ACL (local fallback?)", prefix)
	}
	// A refusal by the ACL is counted under its own cause (NOPERM: auth);
	// a call that only missed the store timeout on a loaded machine is not
	// what this test is about, so every cause but timeout must stay at 0.
	for _, cause := range redisconn.Causes {
		if cause == redisconn.CauseTimeout {
			continue
		}
		name := `civicgate_redis_errors_total{cause="` + cause + `",component="ratelimit"}`
		n, err := s.GatewayMetric(ctx, name)
		if err != nil || n != 0 {
			t.Fatalf("limiter store errors against the ACL'd Redis, cause %s: %v (%v)", cause, n, err)
		}
	}
}
