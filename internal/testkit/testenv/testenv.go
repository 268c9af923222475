// Package testenv gives integration tests their own throwaway PostgreSQL
// database and Redis key prefix on the real services that `make test` starts.
//
// Nothing here mocks a service: a test that needs PostgreSQL or Redis and cannot
// reach it fails, because `make test` is responsible for starting both before
// any test runs. Under `go test -short` (`make check`, the fast tier that
// starts no service) every helper that needs a service skips its test instead:
// see NeedsServices.
//
// Addresses come from the environment, with the local defaults:
//
//	CIVICGATE_TEST_PG     admin DSN   (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
//	CIVICGATE_TEST_REDIS  host:port   (default 127.0.0.1:6379)
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// NeedsServices skips t under -short: the fast tier (`make check`) runs only
// the tests that need no PostgreSQL, Redis, browser or whole stack; `make test`
// runs them all without -short, where this never skips. Every helper of this
// package that starts or reaches a service calls it first.
func NeedsServices(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real services: run by make test, skipped by make check (-short)")
	}
}

// AdminDSN is the DSN of the server's maintenance database, used to create and
// drop throwaway databases.
func AdminDSN() string {
	if v := os.Getenv("CIVICGATE_TEST_PG"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// RedisAddr is the host:port of the test Redis server.
func RedisAddr() string {
	if v := os.Getenv("CIVICGATE_TEST_REDIS"); v != "" {
		return v
	}
	return "127.0.0.1:6379"
}

// RandomSuffix returns n random bytes as lowercase hex.
func RandomSuffix(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

// Postgres creates an empty database for this test (and its subtests) and
// returns its DSN. The database is dropped when the test ends, with any
// connections still open to it terminated first.
func Postgres(t testing.TB) string {
	t.Helper()
	NeedsServices(t)
	name := "cgtest_" + sanitize(t.Name()) + "_" + RandomSuffix(4)
	if len(name) > 63 {
		name = "cgtest_" + RandomSuffix(8)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminDSN())
	if err != nil {
		t.Fatalf("testenv: PostgreSQL is not reachable at %s (make test starts it): %v", redactDSN(AdminDSN()), err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("testenv: create database %s: %v", name, err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	u, err := url.Parse(AdminDSN())
	if err != nil {
		t.Fatalf("testenv: parse admin DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func dropDatabase(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminDSN())
	if err != nil {
		t.Logf("testenv: drop %s: %v", name, err)
		return
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Logf("testenv: drop %s: %v", name, err)
	}
}

// Redis returns a client on the test Redis server and a key prefix unique to
// this test. Every key the test's code writes must start with the prefix; the
// keys are deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	NeedsServices(t)
	client := redis.NewClient(&redis.Options{Addr: RedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("testenv: Redis is not reachable at %s (make test starts it): %v", RedisAddr(), err)
	}
	prefix := "cgtest:" + sanitize(t.Name()) + ":" + RandomSuffix(4) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		_ = client.Close()
	})
	return client, prefix
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It is
// drawn at random below the kernel's ephemeral range (20000–32767), so a
// listener or dialer that asks the kernel for any port (":0", every outgoing
// connection) cannot be handed the same port between this call and the
// moment the test's process binds it. It never returns a port twice in one
// process, and while the test runs no other test process that uses FreePort
// is handed it either (reservePort): `go test ./...` runs packages in
// parallel, and two of them drawing one port between the check and the bind
// made a stack's start fail with "address already in use" — or, worse, two
// gateways serve one port: Caddy binds with SO_REUSEPORT, so a second Caddy
// on the same port succeeds and the kernel splits connections between them
// (a TLS dial answered by the other stack's plain-HTTP listener: "first
// record does not look like a TLS handshake").
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		n, err := rand.Int(rand.Reader, big.NewInt(32768-20000))
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		port := 20000 + int(n.Int64())
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue // given to an earlier caller of this process, maybe not bound yet
		}
		release, ok := reservePort(port)
		if !ok {
			continue // held by another test process, maybe not bound yet
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			release()
			continue // taken: draw again
		}
		_ = l.Close()
		t.Cleanup(release)
		return port
	}
	t.Fatal("testenv: no free port in 20000–32767 after 200 draws")
	return 0
}

// handedOut is every port FreePort returned in this test process: a stack
// draws several before any is bound, and two equal draws (the gateway's
// admin port on recordsd's) made a start fail now and then.
var handedOut sync.Map

func sanitize(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 30 {
			break
		}
	}
	return b.String()
}

func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable DSN)"
	}
	return fmt.Sprintf("%s:%s", u.Hostname(), u.Port())
}
