package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/internal/testkit/stack"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

// Usage per operation under hostile documents (docs/design.md D69, D70, D76),
// through the built binary: a document built to explode its coordinates
// (aliases, a fragment spread twice, sixty arguments, six hundred fields) is
// stored with exactly the 512 the shape keeps, the rest counted; markup
// in a document's strings, comments or operationName never reaches the rows,
// the text output or the JSON; and a flood of unique documents from one key
// keeps its rows bounded by max_operations_per_key, the rest folded into
// "other", the totals exact.

// Sizes of the wide schema: fields of Wide, Int arguments of Query.wide.
const (
	wideFields = 600
	wideArgs   = 60
	// opsPerKey is the gateway's max_operations_per_key.
	opsPerKey = 10
	// maxCoordinates is analysis.MaxCoordinates (D69).
	maxCoordinates = 512
)

// wideSchema is a schema with more coordinates than an operation's shape
// keeps.
func wideSchema() string {
	var b strings.Builder
	b.WriteString("type Query {\n  wide(s: String")
	for i := range wideArgs {
		fmt.Fprintf(&b, ", a%d: Int", i)
	}
	b.WriteString("): Wide\n}\n\ntype Wide {\n")
	for i := range wideFields {
		fmt.Fprintf(&b, "  f%d: Int\n", i)
	}
	b.WriteString("}\n")
	return b.String()
}

// opsHostileCaddyfile: keys in PostgreSQL, usage per operation flushed
// every second, the guard over the wide schema in front of a fixed answer
// (what the backend says does not matter to usage: its status does).
const opsHostileCaddyfile = `{
	admin {$CIVICGATE_ADMIN}
	civic_auth {
		keys postgres {env.DATABASE_URL}
		environment live
		identity_secret {env.CIVIC_IDENTITY_SECRET}
		tier wide 1000000/m wide
	}
	civic_rate_limit {
		redis {env.REDIS_URL}
		key_prefix {$CIVICGATE_RL_PREFIX}
		usage {
			postgres {env.DATABASE_URL}
			flush_interval 1s
			max_operations_per_key 10
		}
	}
}

http://{$OPS_ADDR} {
	route /graphql {
		civic_auth
		civic_rate_limit
		graphql_guard {
			schema {$OPS_SCHEMA}
			operations query
			max_cost 100000
			family wide wide
		}
		header Content-Type application/json
		respond ` + "`" + `{"data":{"wide":null}}` + "`" + ` 200
	}
}
`

// opsHostile is the running gateway.
type opsHostile struct {
	s   *stack.Stack
	url string
}

func startOpsHostile(t *testing.T) *opsHostile {
	t.Helper()
	s := stack.New(t, &bins)
	s.Run(bins.Civicgate, "keys", "migrate")
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	schema := filepath.Join(s.Dir, "wide.graphqls")
	cf := filepath.Join(s.Dir, "Caddyfile")
	if err := os.WriteFile(schema, []byte(wideSchema()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, []byte(opsHostileCaddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Setenv("OPS_ADDR", addr)
	s.Setenv("OPS_SCHEMA", schema)
	gw := s.SpawnProc("civicgate", bins.Civicgate, "run", "--config", cf, "--adapter", "caddyfile")
	o := &opsHostile{s: s, url: "http://" + addr + "/graphql"}
	stack.WaitFor(t, 60*time.Second, "the gateway", func() error {
		if gw.Exited() {
			t.Fatalf("civicgate exited while starting; log %s", gw.Log)
		}
		resp, err := http.Post(o.url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return o
}

// send posts one request of key; it returns the status and body.
func (o *opsHostile) send(t *testing.T, key string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	st, got, _, err := doRequest(http.DefaultClient, http.MethodPost, o.url, key, string(b))
	if err != nil {
		t.Fatal(err)
	}
	return st, got
}

// hostileOperation is a row of `civicgate usage operations --json`.
type hostileOperation struct {
	KeyID    string `json:"key_id"`
	Hash     string `json:"hash"`
	Type     string `json:"type"`
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
}

// operations waits until org's rows hold total requests and returns them
// with the command's JSON and text outputs.
func (o *opsHostile) operations(t *testing.T, org string, total int64) (rows []hostileOperation, jsonOut, textOut string) {
	t.Helper()
	stack.WaitFor(t, 60*time.Second, fmt.Sprintf("%s's rows with %d requests", org, total), func() error {
		out, err := o.s.RunErr(bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var a struct {
			Operations []hostileOperation `json:"operations"`
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var sum int64
		for _, r := range a.Operations {
			sum += r.Requests
		}
		if sum != total {
			return fmt.Errorf("rows %+v sum to %d requests, want %d", a.Operations, sum, total)
		}
		rows, jsonOut = a.Operations, out
		return nil
	})
	textOut = o.s.Run(bins.Civicgate, "usage", "operations", "--org", org, "--since", "1h")
	return rows, jsonOut, textOut
}

func TestOperationsHostile(t *testing.T) {
	o := startOpsHostile(t)
	issue := func(prefix string) (key, id, org string) {
		org = prefix + "-" + testenv.RandomSuffix(6)
		key, id = o.s.IssueKey(org, "wide", "live")
		return key, id, org
	}

	t.Run("coordinates explode: 512 kept, the rest counted", func(t *testing.T) {
		key, id, org := issue("explode")
		var args, fields strings.Builder
		for i := range wideArgs {
			fmt.Fprintf(&args, " a%d: %d", i, i)
		}
		for i := range wideFields {
			fmt.Fprintf(&fields, " f%d", i)
		}
		// Two aliases of the root field, the fragment spread in both and an
		// alias of a field it already selects: aliases and repeated spreads
		// add no coordinate, arguments and fields do.
		doc := fmt.Sprintf(`query Explode { x: wide(%s) { ...W } y: wide { ...W again: f0 } } fragment W on Wide {%s }`,
			args.String(), fields.String())
		for range 2 {
			if st, body := o.send(t, key, map[string]any{"query": doc}); st != http.StatusOK || !strings.Contains(body, `"data"`) {
				t.Fatalf("the exploding document: %d %s", st, body)
			}
		}
		rows, _, _ := o.operations(t, org, 2)
		if len(rows) != 1 || rows[0].Name != "Explode" || rows[0].KeyID != id || rows[0].Requests != 2 || rows[0].Errors != 0 {
			t.Fatalf("rows %+v", rows)
		}
		out := o.s.Run(bins.Civicgate, "usage", "fields", "--org", org, "--since", "1h", "--json")
		var answer struct {
			Fields []struct {
				Coordinate string `json:"coordinate"`
				Requests   int64  `json:"requests"`
			} `json:"fields"`
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// Sorted, the root field and its sixty arguments come first; the
		// fields fill the cap.
		if len(answer.Fields) != maxCoordinates {
			t.Fatalf("%d coordinates stored, want the cap %d", len(answer.Fields), maxCoordinates)
		}
		seen := map[string]bool{}
		for _, f := range answer.Fields {
			if f.Requests != 2 || seen[f.Coordinate] {
				t.Fatalf("coordinate %+v (twice: %v)", f, seen[f.Coordinate])
			}
			seen[f.Coordinate] = true
		}
		if !seen["Query.wide"] || !seen["Query.wide(a59:)"] || !seen["Wide.f0"] {
			t.Fatalf("the root field, its arguments or the first field missing: %s", out)
		}
		want := float64(1 + wideArgs + wideFields - maxCoordinates) // compiled once, counted once
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if got, err := o.s.GatewayMetric(ctx, "civicgate_graphql_guard_shape_coordinates_dropped_total"); err != nil || got != want {
			t.Fatalf("coordinates dropped: %v %v, want %v", got, err, want)
		}
	})

	t.Run("markup never reaches the rows or the output", func(t *testing.T) {
		key, _, org := issue("markup")
		const markup = `<script>alert(1)</script>`
		// Markup where GraphQL allows any text: a string literal, a
		// comment. Admitted; the literal is replaced in the stored text.
		doc := "query Lookalike_script_ { lt_img_src_x_: wide(s: \"" + markup + "\") { f1 } }\n# <img src=x onerror=alert(1)>\n"
		if st, body := o.send(t, key, map[string]any{"query": doc}); st != http.StatusOK {
			t.Fatalf("markup in a string and a comment: %d %s", st, body)
		}
		// Markup where GraphQL wants a name is refused before anything
		// is counted: an operation name, an alias, the operationName member.
		for _, body := range []map[string]any{
			{"query": "query <b>Bold</b> { wide { f1 } }"},
			{"query": "{ <i>x</i>: wide { f1 } }"},
			{"query": "query Lookalike_script_ { wide { f1 } }", "operationName": markup},
		} {
			if st, got := o.send(t, key, body); st == http.StatusOK && !strings.Contains(got, `"errors"`) {
				t.Fatalf("%v admitted: %d %s", body, st, got)
			}
		}
		rows, jsonOut, textOut := o.operations(t, org, 1)
		if len(rows) != 1 || rows[0].Name != "Lookalike_script_" {
			t.Fatalf("rows %+v", rows)
		}
		for what, out := range map[string]string{"JSON": jsonOut, "text": textOut} {
			if strings.ContainsAny(out, "<>") || strings.Contains(out, "alert") {
				t.Errorf("usage operations %s output holds markup: %s", what, out)
			}
		}
		if !strings.Contains(textOut, "Lookalike_script_") {
			t.Errorf("the text output does not name the operation: %s", textOut)
		}
		// The stored text: the literal replaced, the comment dropped.
		conn, err := pgx.Connect(t.Context(), o.s.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var normalized string
		if err := conn.QueryRow(t.Context(), `SELECT normalized FROM civicgate.operations WHERE op_hash = $1`, rows[0].Hash).Scan(&normalized); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(normalized, "<>") || strings.Contains(normalized, "alert") || !strings.Contains(normalized, `""`) {
			t.Fatalf("stored text %q", normalized)
		}
	})

	t.Run("a flood of unique documents folds into other", func(t *testing.T) {
		key, id, org := issue("flood")
		const unique = 60
		for i := range unique {
			doc := fmt.Sprintf("query Flood%d { wide { f%d } }", i, i)
			if st, body := o.send(t, key, map[string]any{"query": doc}); st != http.StatusOK {
				t.Fatalf("document %d: %d %s", i, st, body)
			}
		}
		rows, _, _ := o.operations(t, org, unique)
		if len(rows) != opsPerKey+1 {
			t.Fatalf("%d rows, want %d named and other: %+v", len(rows), opsPerKey, rows)
		}
		var other *hostileOperation
		for i, r := range rows {
			if r.KeyID != id || r.Errors != 0 {
				t.Fatalf("row %+v", r)
			}
			switch {
			case r.Name == "other":
				other = &rows[i]
			case !strings.HasPrefix(r.Name, "Flood") || r.Requests != 1:
				t.Fatalf("row %+v", r)
			}
		}
		if other == nil || other.Requests != unique-opsPerKey {
			t.Fatalf("other %+v, want %d requests", other, unique-opsPerKey)
		}
	})
}
