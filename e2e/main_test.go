// Package e2e runs the real binaries (recordsd and civicgate) as processes
// against real PostgreSQL and Redis, and talks HTTPS to the gateway the way an
// API client does, trusting Caddy's local CA root from its data directory.
package e2e

import (
	"os"
	"testing"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// bins is built once for the whole package and removed at the end.
var bins stack.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}
