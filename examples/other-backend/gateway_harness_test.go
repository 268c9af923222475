package otherbackend

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
	"github.com/civicgate/civicgate/examples/other-backend/libraryclient"
	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// bins are the civicgate and recordsd binaries, built once for the package.
var bins stack.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

var (
	liveKey = regexp.MustCompile(`cg_live_[0-9A-Za-z]+`)
	keyID   = regexp.MustCompile(`key_[0-9A-Za-z]+`)
)

// keyStore is where the example's gateway reads its keys.
type keyStore int

const (
	keysInFile     keyStore = iota // keys issued with --file, read from the file
	keysInPostgres                 // keys in the stack's database, revocable live
)

// gateway is examples/other-backend/Caddyfile run by the real civicgate
// binary in front of the real library engine (in this process, recorded).
type gateway struct {
	t        *testing.T
	s        *stack.Stack
	store    keyStore
	keysFile string
	URL      string // http://127.0.0.1:<port>/graphql
	WSURL    string // ws://127.0.0.1:<port>/graphql
	Secret   []byte // CIVIC_IDENTITY_SECRET
	Upstream *upstreamRecorder
	Events   *library.LoanEvents
	Backend  *httptest.Server
	keys     []string
}

// newGateway prepares the gateway and starts the engine; issue keys, then
// start the gateway.
func newGateway(t *testing.T, store keyStore) *gateway {
	t.Helper()
	s := stack.New(t, &bins)
	g := &gateway{t: t, s: s, store: store, Upstream: &upstreamRecorder{}, Events: library.NewLoanEvents()}
	g.Secret = []byte(s.Getenv("CIVIC_IDENTITY_SECRET"))
	engine := library.NewHandler(library.NewCatalog(), g.Events, g.Upstream.hooks(library.Options{IdentitySecret: g.Secret}))
	mux := http.NewServeMux()
	mux.Handle("/graphql", g.Upstream.wrap(engine))
	g.Backend = httptest.NewServer(mux)
	t.Cleanup(g.Backend.Close)

	dir := filepath.Join(s.Root, "examples", "other-backend")
	port := testenv.FreePort(t)
	g.URL = "http://127.0.0.1:" + strconv.Itoa(port) + "/graphql"
	g.WSURL = "ws://127.0.0.1:" + strconv.Itoa(port) + "/graphql"
	s.Setenv("SITE_ADDRESS", "http://127.0.0.1:"+strconv.Itoa(port))
	s.Setenv("UPSTREAM", strings.TrimPrefix(g.Backend.URL, "http://"))
	s.Setenv("SCHEMA_FILE", filepath.Join(dir, "library.graphqls"))
	s.Setenv("TRUSTED_DOCUMENTS", filepath.Join(dir, "manifest.json"))
	switch store {
	case keysInFile:
		g.keysFile = filepath.Join(s.Dir, "keys.json")
		s.Setenv("CIVICGATE_KEYS_SOURCE", "file "+g.keysFile)
	case keysInPostgres:
		s.Setenv("CIVICGATE_KEYS_SOURCE", "postgres "+s.DSN)
		s.Run(bins.Civicgate, "keys", "migrate")
	}
	return g
}

// issue issues a live key for the organization and tier and returns it with
// its id.
func (g *gateway) issue(org, tier string) (key, id string) {
	g.t.Helper()
	args := []string{"keys", "issue", "--org", org, "--tier", tier, "--env", "live"}
	if g.store == keysInFile {
		args = append(args, "--file", g.keysFile)
	}
	out := g.s.Run(bins.Civicgate, args...)
	key, id = liveKey.FindString(out), keyID.FindString(out)
	if key == "" || id == "" {
		g.t.Fatal("keys issue printed no key or no id")
	}
	g.keys = append(g.keys, key)
	return key, id
}

// caddyfile is the example's Caddyfile.
func (g *gateway) caddyfile() string {
	return filepath.Join(g.s.Root, "examples", "other-backend", "Caddyfile")
}

// start validates and runs the Caddyfile and waits until the gateway answers.
// When the test ends, it checks that no key reached the engine or a log.
func (g *gateway) start() {
	g.t.Helper()
	if out, err := g.s.RunErr(bins.Civicgate, "validate", "--config", g.caddyfile(), "--adapter", "caddyfile"); err != nil {
		g.t.Fatalf("validate: %v\n%s", err, out)
	}
	p := g.s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", g.caddyfile(), "--adapter", "caddyfile")
	stack.WaitFor(g.t, 30*time.Second, "example gateway", func() error {
		if p.Exited() {
			g.t.Fatalf("civicgate exited while starting; log %s", p.Log)
		}
		resp, err := http.Post(g.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	g.t.Cleanup(func() {
		g.Upstream.assertNeverSaw(g.t, g.keys...)
		g.s.CheckLogs(g.t, g.keys...)
	})
}

// awaitSubscribers waits until the engine holds n open subscriptions.
func (g *gateway) awaitSubscribers(t *testing.T, n int) {
	t.Helper()
	stack.WaitFor(t, 10*time.Second, strconv.Itoa(n)+" subscriptions at the engine", func() error {
		if got := g.Events.Subscribers(); got != n {
			return fmt.Errorf("engine holds %d (it received %d WebSocket upgrades, %d connection_init)", got, len(g.Upstream.upgrades()), g.Upstream.initCount())
		}
		return nil
	})
}

// awaitSubscribed waits until the engine holds n open subscriptions, failing
// at once if the client's socket ends or its subscription errs first.
func (g *gateway) awaitSubscribed(t *testing.T, sub *libraryclient.Subscription, n int) {
	t.Helper()
	stack.WaitFor(t, 10*time.Second, strconv.Itoa(n)+" subscriptions at the engine", func() error {
		select {
		case err := <-sub.Done:
			t.Fatalf("socket ended before the subscription reached the engine: %v (close code %d)", err, sub.CloseCode(err))
		case err := <-sub.Errors:
			t.Fatalf("subscription refused: %v", err)
		default:
		}
		if got := g.Events.Subscribers(); got != n {
			return fmt.Errorf("engine holds %d (it received %d WebSocket upgrades, %d connection_init)", got, len(g.Upstream.upgrades()), g.Upstream.initCount())
		}
		return nil
	})
}
