package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// TestMigrateThenServe runs the real subcommands: migrate (twice), then serve in dev mode until /healthz
// answers, then a GraphQL request, then shutdown through context cancellation.
func TestMigrateThenServe(t *testing.T) {
	t.Setenv("DATABASE_URL", testenv.Postgres(t))
	t.Setenv("RECORDSD_CURSOR_SECRET", "0123456789abcdef0123456789abcdef")
	t.Setenv("CIVIC_IDENTITY_SECRET", "")
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := commands["migrate"](ctx, nil); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
	}
	if commands["seed"] == nil {
		t.Fatal("seed subcommand not registered")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runServe(sctx, []string{"--listen", addr, "--dev-insecure-no-identity"}) }()
	testenv.Eventually(t, 10*time.Second, "recordsd to become healthy", func() error {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/healthz answers %d", resp.StatusCode)
		}
		return nil
	})
	resp, err := http.Post("http://"+addr+"/graphql", "application/json", strings.NewReader(`{"query":"{ bills { items { id } nextCursor } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"data":{"bills":{"items":[],"nextCursor":null}}}` {
		t.Fatalf("graphql = %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	// Without the identity secret and without dev mode, serve refuses to start.
	if err := runServe(ctx, []string{"--listen", "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "CIVIC_IDENTITY_SECRET") {
		t.Fatalf("serve without identity secret: %v", err)
	}
}
