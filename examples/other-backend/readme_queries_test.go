package otherbackend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

// readmeCurl is one `curl … -d '<body>'` of the README, with the address it posts to.
type readmeCurl struct {
	addr, body string
	stream     bool // Accept: text/event-stream
}

var (
	curlAddr = regexp.MustCompile(`curl [^\n]*?http://(127\.0\.0\.1:\d+)/graphql`)
	curlBody = regexp.MustCompile(`-d '([^']*)'`)
)

// readmeCurls returns the README's curl commands (a command continues over lines ending in a backslash).
func readmeCurls(t *testing.T, readme string) []readmeCurl {
	t.Helper()
	var out []readmeCurl
	for _, cmd := range strings.Split(strings.ReplaceAll(readme, "\\\n", " "), "\n") {
		a := curlAddr.FindStringSubmatch(cmd)
		b := curlBody.FindStringSubmatch(cmd)
		if a == nil || b == nil {
			continue
		}
		if !json.Valid([]byte(b[1])) {
			t.Fatalf("README: the body of %q is not JSON", cmd)
		}
		out = append(out, readmeCurl{addr: a[1], body: b[1], stream: strings.Contains(cmd, "text/event-stream")})
	}
	return out
}

// readmeJSONBlocks returns the README's ```json blocks.
func readmeJSONBlocks(readme string) []string {
	var out []string
	for _, part := range strings.Split(readme, "```json\n")[1:] {
		block, _, _ := strings.Cut(part, "\n```")
		out = append(out, block)
	}
	return out
}

// TestReadmeQueries runs the README's queries as it shows them: the one against libraryd alone on the engine
// (its answer is the README's json block), the ones through the gateway on the example's Caddyfile run by the
// real civicgate with a partner key.
func TestReadmeQueries(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	curls := readmeCurls(t, readme)
	blocks := readmeJSONBlocks(readme)
	if len(blocks) != 1 {
		t.Fatalf("README: %d json blocks, want the engine's answer only", len(blocks))
	}
	documented := blocks[0]

	engine := httptest.NewServer(library.NewHandler(library.NewCatalog(), library.NewLoanEvents(), library.Options{}))
	defer engine.Close()
	g := newGateway(t, keysInFile)
	partner, _ := g.issue("county-archive", "partner")
	g.start()

	var direct, gateway int
	for _, c := range curls {
		switch {
		case c.addr == readmeLibrarydAddr:
			direct++
			r := postJSON(t, engine.URL, "", json.RawMessage(c.body))
			if r.Status != http.StatusOK || r.Body != documented {
				t.Errorf("README libraryd query %s: %d %s\nREADME shows %s", c.body, r.Status, r.Body, documented)
			}
		case c.addr == readmeGatewayAddr && !c.stream:
			gateway++
			r := postJSON(t, g.URL, partner, json.RawMessage(c.body))
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Body, `{"data":{`) || strings.Contains(r.Body, `"errors"`) {
				t.Errorf("README gateway query %s: %d %s", c.body, r.Status, r.Body)
			}
			if strings.Contains(c.body, "books(") && r.Body != documented {
				t.Errorf("README gateway query %s answers %s, not what the README shows: %s", c.body, r.Body, documented)
			}
		case c.addr == readmeGatewayAddr:
		default:
			t.Errorf("README: a curl to %s, neither libraryd's %s nor the gateway's %s", c.addr, readmeLibrarydAddr, readmeGatewayAddr)
		}
	}
	if direct != 1 || gateway < 2 {
		t.Errorf("README: %d queries to libraryd alone and %d through the gateway, want 1 and at least 2", direct, gateway)
	}
}
