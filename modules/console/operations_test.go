package console

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/ratelimit/usage"
)

// orgOf is a usage.OrgSource of a fixed organization id.
type orgOf string

func (o orgOf) Org() string { return string(o) }

// countOperation counts n requests of op for key of org at at and writes
// them as a gateway's flush does (usage.OperationMeter, usage.WriteFlush).
func (g *gateway) countOperation(t *testing.T, key, org string, op *contract.GraphQLOperation, n int, at time.Time, latency time.Duration) {
	t.Helper()
	m := usage.NewOperationMeter(0, 0)
	for i := range n {
		m.Add(&usage.OperationSample{KeyID: key, Org: orgOf(org), At: at, Operation: op, Error: i == 0 && n > 1, Cost: 1, Latency: latency})
	}
	ops, recs := m.Drain()
	if _, err := usage.WriteFlush(t.Context(), g.pool, usage.NewBatchID(), usage.Batch{Operations: ops, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

// keyIDOf is the id of o's key.
func (g *gateway) keyIDOf(t *testing.T, o org) string {
	t.Helper()
	var id string
	if err := g.pool.QueryRow(t.Context(), `SELECT id FROM civicgate.api_keys WHERE org_id = $1 ORDER BY created_at LIMIT 1`, o.id).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// reasonMarkup is a deprecation reason holding markup: schema text, shown
// as text.
const reasonMarkup = `<img src=x onerror=alert(1)> use "books"`

func operationOf(name string, hash int, coords, deprecated, reasons []string) *contract.GraphQLOperation {
	return &contract.GraphQLOperation{Type: "query", Name: name, DocumentHash: fmt.Sprintf("%064x", hash),
		Shape: &contract.OperationShape{Coordinates: coords, Deprecated: deprecated, DeprecationReasons: reasons,
			Normalized: "query " + name + `{books(filter:""){title}}`}}
}

// seedTwoOrganizations counts, an hour ago: acme's key ran AcmeBooks (reads
// the deprecated Query.oldBooks) 7 times and AcmeShelf twice, a second key
// of acme AcmeShelf once; other's key
// ran OtherSecretOp (reads the deprecated Query.otherLegacy) 50 times; and
// acme's key ran AcmeMonthly ten days ago.
func seedTwoOrganizations(t *testing.T, g *gateway, acme, other org) {
	t.Helper()
	hourAgo := time.Now().Add(-time.Hour)
	books := operationOf("AcmeBooks", 0xa1, []string{"Book.title", "Query.oldBooks"}, []string{"Query.oldBooks"}, []string{reasonMarkup})
	shelf := operationOf("AcmeShelf", 0xa2, []string{"Book.title", "Query.shelf"}, nil, nil)
	monthly := operationOf("AcmeMonthly", 0xa3, []string{"Query.report"}, nil, nil)
	secret := operationOf("OtherSecretOp", 0xb1, []string{"Query.otherLegacy", "Query.otherOnly"}, []string{"Query.otherLegacy"}, []string{"other's reason"})
	g.countOperation(t, g.keyIDOf(t, acme), acme.id, books, 7, hourAgo, 40*time.Millisecond)
	g.countOperation(t, g.keyIDOf(t, acme), acme.id, shelf, 2, hourAgo, 3*time.Millisecond)
	g.countOperation(t, "key_acme_second", acme.id, shelf, 1, hourAgo, 3*time.Millisecond)
	g.countOperation(t, g.keyIDOf(t, acme), acme.id, monthly, 1, time.Now().Add(-10*24*time.Hour), time.Millisecond)
	g.countOperation(t, g.keyIDOf(t, other), other.id, secret, 50, hourAgo, time.Millisecond)
}

var cellText = regexp.MustCompile(`<td[^>]*data-label="([^"]+)"[^>]*>(.*?)</td>`)

// tableRows returns the rows of the table with id, each as "label=text"
// cells joined by "; ".
func tableRows(t *testing.T, page, id string) []string {
	t.Helper()
	start := strings.Index(page, `<table id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no table %s in the page:\n%s", id, page)
	}
	table := page[start:]
	table = table[:strings.Index(table, "</table>")]
	var rows []string
	for _, tr := range strings.Split(table, "<tr")[1:] {
		var cells []string
		for _, c := range cellText.FindAllStringSubmatch(tr, -1) {
			cells = append(cells, c[1]+"="+regexp.MustCompile(`<[^>]+>`).ReplaceAllString(c[2], ""))
		}
		if len(cells) > 0 {
			rows = append(rows, strings.Join(cells, "; "))
		}
	}
	return rows
}

// TestOperationsPage: a member sees the operations, fields and deprecated
// fields of their organization's keys only, over the window chosen; the
// reason's markup is text; another organization's page answers 404 and
// no query parameter switches the organization; an operator sees each.
func TestOperationsPage(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	other := g.newOrg(t, "other", "paid")
	seedTwoOrganizations(t, g, acme, other)
	viewer := g.session(t, acme, keystore.RoleViewer)
	path := "/orgs/" + acme.id + "/operations"

	r := g.consoleDo(t, viewer, http.MethodGet, path, nil)
	if r.code != http.StatusOK {
		t.Fatalf("operations page: %d\n%s", r.code, r.body)
	}
	deprecated := tableRows(t, r.body, "deprecated")
	want := `Coordinate=Query.oldBooks; Reason=&lt;img src=x onerror=alert(1)&gt; use &#34;books&#34;; Requests=7; Operations=AcmeBooks; Keys=1; Last seen=`
	if len(deprecated) != 1 || !strings.HasPrefix(deprecated[0], want) {
		t.Errorf("deprecated rows %q, want one starting %q", deprecated, want)
	}
	ops := tableRows(t, r.body, "operations")
	if len(ops) != 2 || !strings.HasPrefix(ops[0], "Name=AcmeBooks; Type=query; Requests=7; Errors=1; p95=≤ 64ms; Keys=1") ||
		!strings.HasPrefix(ops[1], "Name=AcmeShelf; Type=query; Requests=3; Errors=1; p95=≤ 4ms; Keys=2") {
		t.Errorf("operation rows of 24h %q", ops)
	}
	fields := tableRows(t, r.body, "fields")
	if len(fields) != 3 || !strings.HasPrefix(fields[0], "Coordinate=Book.title; Requests=10; Operations=2") {
		t.Errorf("field rows %q", fields)
	}
	for _, foreign := range []string{"OtherSecretOp", "Query.otherLegacy", "Query.otherOnly", "other's reason", "<img", "AcmeMonthly", `books(filter:`} {
		if strings.Contains(r.body, foreign) {
			t.Errorf("acme's 24h page shows %q", foreign)
		}
	}
	if !strings.Contains(r.body, `href="/orgs/`+acme.id+`/operations" aria-current="page">Operations</a>`) {
		t.Error("the navigation does not mark Operations as the current page")
	}

	// 30 days include the operation of ten days ago; the window is selected.
	r = g.consoleDo(t, viewer, http.MethodGet, path+"?window=30d", nil)
	if ops := tableRows(t, r.body, "operations"); r.code != http.StatusOK || len(ops) != 3 ||
		!strings.Contains(r.body, `<option value="30d" selected>`) || !strings.HasPrefix(ops[2], "Name=AcmeMonthly") {
		t.Errorf("30d: %d, rows %q", r.code, ops)
	}

	// Another organization's page, with the member's session: not found.
	if r := g.consoleDo(t, viewer, http.MethodGet, "/orgs/"+other.id+"/operations", nil); r.code != http.StatusNotFound ||
		strings.Contains(r.body, "OtherSecretOp") {
		t.Errorf("other's operations from acme's member: %d", r.code)
	}
	// Parameters naming the other organization change nothing.
	for _, q := range []string{"org=" + other.id, "org_id=" + other.id, "key=" + g.keyIDOf(t, other), "window=24h&org=" + other.name} {
		r := g.consoleDo(t, viewer, http.MethodGet, path+"?"+q, nil)
		if r.code != http.StatusOK || strings.Contains(r.body, "OtherSecretOp") || !strings.Contains(r.body, "AcmeBooks") {
			t.Errorf("?%s: %d, other's operation shown or acme's missing", q, r.code)
		}
	}

	// The other organization's member sees its own only.
	r = g.consoleDo(t, g.session(t, other, keystore.RoleViewer), http.MethodGet, "/orgs/"+other.id+"/operations", nil)
	if d := tableRows(t, r.body, "deprecated"); r.code != http.StatusOK || len(d) != 1 ||
		!strings.HasPrefix(d[0], "Coordinate=Query.otherLegacy; Reason=other&#39;s reason; Requests=50; Operations=OtherSecretOp; Keys=1") ||
		strings.Contains(r.body, "AcmeBooks") {
		t.Errorf("other's page: %d, deprecated %q", r.code, d)
	}

	// An operator sees every organization's, each on its page.
	operator := g.session(t, org{name: "ops"}, keystore.RoleOperator)
	for o, op := range map[org]string{acme: "AcmeBooks", other: "OtherSecretOp"} {
		if r := g.consoleDo(t, operator, http.MethodGet, "/orgs/"+o.id+"/operations", nil); r.code != http.StatusOK || !strings.Contains(r.body, op) {
			t.Errorf("the operator's page of %s: %d, %s missing", o.name, r.code, op)
		}
	}
}

// TestOperationsPageWindows: a window other than 24h, 7d and 30d is
// refused with 400 and a sentence naming the choices, the value not echoed;
// an organization with nothing counted gets empty tables.
func TestOperationsPageWindows(t *testing.T) {
	g := startGateway(t)
	acme := g.newOrg(t, "acme", "paid")
	viewer := g.session(t, acme, keystore.RoleViewer)
	path := "/orgs/" + acme.id + "/operations"
	for _, w := range []string{"90d", "365d", "0", "-24h", "24H", "9223372036854775807h", strings.Repeat("9", 5000) + "d", "<script>x</script>"} {
		r := g.consoleDo(t, viewer, http.MethodGet, path+"?window="+url.QueryEscape(w), nil)
		if r.code != http.StatusBadRequest || !strings.Contains(r.body, "Choose 24h, 7d or 30d.") || strings.Contains(r.body, "<script>x") ||
			strings.Contains(r.body, "99999") {
			t.Errorf("window %.20q: %d\n%.300s", w, r.code, r.body)
		}
	}
	r := g.consoleDo(t, viewer, http.MethodGet, path+"?window=7d", nil)
	if r.code != http.StatusOK || !strings.Contains(r.body, `id="no-deprecated"`) || !strings.Contains(r.body, `id="no-operations"`) ||
		!strings.Contains(r.body, `id="no-fields"`) {
		t.Errorf("an organization with nothing counted: %d\n%s", r.code, r.body)
	}
}
