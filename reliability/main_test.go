// Package reliability runs the real binaries (recordsd and civicgate) against
// real PostgreSQL and Redis on loopback and breaks things on purpose: Redis
// and PostgreSQL taken away and given back under load, an upstream that hangs,
// is slow or refuses, a gateway killed with SIGKILL mid-load, a corpus of
// hostile requests, and a soak of mixed traffic with memory and goroutines
// sampled. Every request loop is bounded and stops by itself.
//
// `make test` runs the short versions. `make soak` sets CIVICGATE_SOAK (a Go
// duration, default 10m there) and the soak runs that long.
package reliability

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
