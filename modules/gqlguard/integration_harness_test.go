package gqlguard

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// adminPort is this package's caddytest admin port (common rules).
const adminPort = 2993

// echo answers with the guard's placeholders and the body it received, so a
// test sees exactly what the next handler got.
const echo = `respond "op={graphql.operation_name} families={graphql.families} cost={graphql.cost} body={http.request.body}" 200`

type server struct {
	tester *caddytest.Tester
	base   string
}

// startCaddy loads a Caddyfile whose site block is routes, on a free port.
func startCaddy(t *testing.T, routes string) *server {
	t.Helper()
	port := testenv.FreePort(t)
	config := fmt.Sprintf(`{
	skip_install_trust
	admin localhost:%d
	http_port %d
	https_port %d
	grace_period 1ns
	auto_https off
}
http://localhost:%d {
%s
}
`, adminPort, port, testenv.FreePort(t), port, routes)
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort, TestRequestTimeout: 20 * time.Second})
	tester.InitServer(config, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return &server{tester: tester, base: fmt.Sprintf("http://localhost:%d", port)}
}

func testSchemaPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/records.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type call struct {
	method  string
	path    string
	ctype   string // "" = application/json; "-" = none
	headers map[string]string
	body    string
	chunked bool // no Content-Length: the guard must stop reading at the limit
}

func (s *server) do(t *testing.T, c call) (*http.Response, string) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	var reader io.Reader = strings.NewReader(c.body)
	if c.chunked {
		reader = struct{ io.Reader }{reader} // hides the length
	}
	req, err := http.NewRequest(method, s.base+c.path, reader)
	if err != nil {
		t.Fatal(err)
	}
	switch c.ctype {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", c.ctype)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.tester.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// q builds a request body with the query (JSON-quoted) and extra members.
func q(query string, extra ...string) string {
	b := `{"query":` + jsonString(query)
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

func jsonString(s string) string {
	return string(marshal(s))
}

func forwarded(op, families string, cost int, body string) string {
	return fmt.Sprintf("op=%s families=%s cost=%d body=%s", op, families, cost, body)
}

const familiesConfig = `
		family bills bills bill
		family members members
		family regulatory_filings regulatoryFilings
		family federal_budgets federalBudgets
		family lobbying_disclosures lobbyingDisclosures
		family search search`

func guardRoutes(schema string) string {
	return fmt.Sprintf(`
	route /g {
		graphql_guard {
			schema %[1]s
			operations query
			entitlements {http.request.header.X-Test-Families}
%[2]s
		}
		%[3]s
	}
	route /civic {
		map {http.request.header.X-Test-Families} {civic.families} {
			~(.+) "${1}"
		}
		graphql_guard {
			schema %[1]s
%[2]s
		}
		%[3]s
	}
	route /closed {
		graphql_guard {
			schema %[1]s
			introspection off
		}
		%[3]s
	}
	route /small {
		graphql_guard {
			schema %[1]s
			max_body 1KiB
			max_tokens 100
			max_depth 4
			max_aliases 2
			max_root_fields 2
			max_directives 1
			max_cost 1000
			default_list_size 10
		}
		%[3]s
	}
	route /measure {
		graphql_guard {
			schema %[1]s
			max_depth 2
			max_tokens 10
			max_cost 5
			measure_only
			operations query
		}
		%[3]s
	}`, schema, familiesConfig, echo)
}
