package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/backend/cursor"
	"github.com/civicgate/civicgate/backend/httpapi"
	"github.com/civicgate/civicgate/backend/store"
)

// diffEnv is one database served twice: by recordsd as configured (compiled plans on) and by a recordsd held to
// gqlgen's executor (httpapi.Config.ReferenceExecutor), so the two answers to a request can be compared.
type diffEnv struct {
	*env
	ref    *httptest.Server
	refAPI *httpapi.Server
}

func newDiffEnv(t testing.TB) *diffEnv {
	t.Helper()
	e := newEnv(t, envOpts{})
	e.seedFixtures()
	e.seedAwkwardBills()
	e.seedAwkwardMembers()
	e.seedAwkwardBudgets()
	e.seedAwkwardRegulatory()
	e.seedAwkwardLobbying()
	refAPI := e.referenceAPI()
	ref := httptest.NewServer(refAPI.Handler())
	t.Cleanup(ref.Close)
	return &diffEnv{env: e, ref: ref, refAPI: refAPI}
}

// referenceAPI is a second recordsd on e's database held to gqlgen's executor.
func (e *env) referenceAPI() *httpapi.Server {
	e.t.Helper()
	codec, err := cursor.New(cursorSecret)
	if err != nil {
		e.t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{
		Store:             store.New(e.pool, codec),
		IdentitySecret:    identitySecret,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReferenceExecutor: true,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return api
}

// seedAwkwardBills adds a page-sized run of bills whose text needs every escape the response writers make
// (quotes, backslashes, control characters, <, >, &, U+2028, U+2029, non-ASCII) and whose nullable columns are
// NULL in turn, so paging, filters and text search reach them.
func (e *env) seedAwkwardBills() {
	e.t.Helper()
	e.exec(`INSERT INTO bills (id, congress, type, number, official_title, introduced_date, member_name,
		member_bioguide_id, member_by_congress_key, committee_names, source_url)
		SELECT 'hr' || (1000 + g) || '-' || (115 + g % 4), 115 + g % 4, (ARRAY['hr','s','hres'])[1 + g % 3], 1000 + g,
		  (ARRAY['Water <Act> & "Quotes"', E'Tab\there\nnew\\line', E'Bell \u0007 and \u001f', 'Sep ' || chr(8232) || ' para ' || chr(8233),
		         'Ünïcödé ☃ 😀 water', 'Plain veterans title'])[1 + g % 6] || ' ' || g,
		  CASE WHEN g % 5 = 0 THEN NULL ELSE DATE '2015-01-01' + g * 7 END,
		  CASE WHEN g % 4 = 0 THEN NULL ELSE 'Rep. <Person> ' || g END,
		  CASE WHEN g % 3 = 0 THEN NULL ELSE 'P' || lpad(g::text, 6, '0') END,
		  CASE WHEN g % 3 = 0 THEN NULL ELSE 'P' || lpad(g::text, 6, '0') || ':' || (115 + g % 4) END,
		  CASE WHEN g % 2 = 0 THEN '' ELSE 'Ways & Means; Energy' END,
		  CASE WHEN g % 7 = 0 THEN NULL ELSE 'https://example.test/bill?x=' || g || '&y=<' || g || '>' END
		FROM generate_series(1, 60) g`)
	e.exec(`UPDATE bills SET last_synced_at = '2026-01-02T03:04:05Z'::timestamptz + (number || ' seconds')::interval`)
}

// seedAwkwardMembers adds two pages of members whose names need escapes and whose ids sort apart from their
// names (a page's terms arrive in id order), with NULL states, no terms, several terms, NULL parties and two
// parties in one Congress and chamber (seq).
func (e *env) seedAwkwardMembers() {
	e.t.Helper()
	e.exec(`INSERT INTO members (member_id, bioguide_id, name, state)
		SELECT 'M' || lpad((100 - g)::text, 6, '0'), 'B' || lpad((100 - g)::text, 6, '0'),
		  (ARRAY['Ann <Q> & "R"', E'Tab\tNew\nLine\\', 'Sep ' || chr(8232) || ' ' || chr(8233), 'Ünïcödé ☃ 😀', E'Bell \u0007'])[1 + g % 5] || ' ' || lpad(g::text, 3, '0'),
		  CASE WHEN g % 4 = 0 THEN NULL ELSE (ARRAY['NC', 'WA', 'NY'])[1 + g % 3] END
		FROM generate_series(1, 40) g`)
	e.exec(`INSERT INTO member_terms (member_id, congress, chamber, party, state, seq)
		SELECT 'M' || lpad((100 - g)::text, 6, '0'), 115 + (g + k) % 4, (ARRAY['house', 'senate'])[1 + (g * k) % 2],
		  CASE WHEN (g + k) % 6 = 0 THEN NULL ELSE (ARRAY['Democrat', 'Republican', E'Ind <"&">'])[1 + (g + k) % 3] END, NULL, 0
		FROM generate_series(1, 40) g, generate_series(0, 2) k
		WHERE g % 5 <> 0 AND k <= g % 3
		ON CONFLICT DO NOTHING`)
	e.exec(`INSERT INTO member_terms (member_id, congress, chamber, party, seq)
		SELECT member_id, congress, chamber, 'Switched', 1 FROM member_terms WHERE member_id LIKE 'M%' AND congress = 117`)
}

// seedAwkwardBudgets adds budget lines of both datasets over twenty agencies (so an agency substring matches a
// few names or more than the probed ones), with amounts from cents to 10^17 and negative, NULL nullable columns
// in turn, every escape in the text, and one NaN amount (an error gqlgen answers itself) at the end of the order.
func (e *env) seedAwkwardBudgets() {
	e.t.Helper()
	e.exec(`INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, month, record_date, agency_code, agency_name,
		bureau_code, bureau_name, account_code, account_title, subfunction_code, subfunction_title, bea_category, on_off_budget,
		amount, fiscal_year_to_date_amount, source_url, edition, estimate, transition_quarter)
		SELECT 'line-' || lpad(g::text, 3, '0'), CASE WHEN g % 2 = 0 THEN 'APPROPRIATIONS' ELSE 'OUTLAYS' END,
		  2015 + g % 6, 114 + g % 6 / 2,
		  CASE WHEN g % 2 = 1 THEN (2015 + g % 6) || '-' || lpad((1 + g % 12)::text, 2, '0') END,
		  CASE WHEN g % 2 = 1 THEN DATE '2015-01-31' + g * 30 END,
		  CASE WHEN g % 3 = 0 THEN NULL ELSE lpad((g % 20)::text, 3, '0') END,
		  (ARRAY['Dept of <Water> & "Power"', E'Dept\tof\nLines\\', 'Dept ' || chr(8232) || ' Sep', 'Dépt Ünïcödé ☃'])[1 + g % 4] || ' ' || (g % 40),
		  CASE WHEN g % 4 = 0 THEN NULL ELSE 'B' || g % 7 END, CASE WHEN g % 5 = 0 THEN NULL ELSE 'Bureau <' || g % 7 || '>' END,
		  CASE WHEN g % 6 = 0 THEN NULL ELSE 'A' || g END, 'Account & ' || (ARRAY['Salaries', 'Grants', E'Bell \u0007'])[1 + g % 3],
		  CASE WHEN g % 7 = 0 THEN NULL ELSE '05' || g % 10 END, CASE WHEN g % 8 = 0 THEN NULL ELSE 'Sub "' || g % 10 || '"' END,
		  CASE WHEN g % 9 = 0 THEN NULL ELSE (ARRAY['Mandatory', 'Discretionary', 'Net interest'])[1 + g % 3] END,
		  CASE WHEN g % 10 = 0 THEN NULL ELSE 'On-budget' END,
		  CASE WHEN g % 11 = 0 THEN NULL ELSE (ARRAY[0.01, 1234.50, -987654.32, 123456789012345678.99, 100, 0, 1e15, 0.1])[1 + g % 8] * (1 + g % 3) END,
		  CASE WHEN g % 2 = 0 THEN NULL ELSE (ARRAY[12345678.9, 0.3, -1, 99999999999999.99])[1 + g % 4] END,
		  CASE WHEN g % 5 = 1 THEN NULL ELSE 'https://example.test/b?x=' || g || '&y=<' || g || '>' END,
		  CASE WHEN g % 2 = 0 AND g % 3 <> 0 THEN 2016 + g % 4 END, CASE WHEN g % 2 = 0 AND g % 3 <> 1 THEN g % 4 = 0 END,
		  g % 13 = 0
		FROM generate_series(1, 60) g`)
	e.exec(`INSERT INTO federal_budget_lines (id, dataset, fiscal_year, congress, agency_name, account_title, amount)
		VALUES ('line-nan', 'APPROPRIATIONS', 1900, 56, 'Not a Number Office', 'NaN', 'NaN')`)
	e.exec(`UPDATE federal_budget_lines SET last_synced_at = '2026-01-02T03:04:05Z'::timestamptz + (fiscal_year || ' seconds')::interval`)
}

// seedAwkwardRegulatory adds filings over twenty agency names (an agency_name substring matches a few names or
// more than the probed ones) whose agencies JSON has NULL, missing, extra and differently cased members, escapes
// and no agencies at all; text arrays with escapes or empty; NULL nullable columns in turn; and, oldest of all,
// a NULL array element and agencies that are not a list (values pgx cannot scan: the reference answers them).
func (e *env) seedAwkwardRegulatory() {
	e.t.Helper()
	e.exec(`INSERT INTO regulatory_filings (id, document_number, type, subtype, title, abstract, action, agency_id, agency_name,
		agencies, agency_ids, agency_names, publication_date, filing_year, filing_period, correction_of, effective_on,
		comments_close_on, rins, docket_ids, citation, significant, html_url, pdf_url, source_url)
		SELECT '2020-' || lpad(g::text, 5, '0'), 'DOC-' || g, (ARRAY['RULE', 'PROPOSED_RULE', 'NOTICE', 'PRESIDENTIAL_DOCUMENT'])[1 + g % 4],
		  CASE WHEN g % 3 = 0 THEN NULL ELSE 'Sub <' || g || '>' END,
		  (ARRAY['Rule & "Title"', E'Tab\there\nline\\', 'Sep ' || chr(8232) || ' ' || chr(8233), 'Ünïcödé ☃ 😀'])[1 + g % 4] || ' ' || g,
		  CASE WHEN g % 4 = 0 THEN NULL ELSE E'Abstract \u0001 <b>' || g END, CASE WHEN g % 5 = 0 THEN NULL ELSE 'Final rule.' END,
		  CASE WHEN g % 7 = 0 THEN NULL ELSE (g % 20)::text END, CASE WHEN g % 7 = 0 THEN NULL ELSE 'Agency <' || g % 20 || '> & Co' END,
		  (ARRAY[
		    '[]',
		    '[{"agency_id":"1","name":"Agency <1> & Co","slug":"a-1","parent_agency_id":null}]',
		    '[{"name":"Only \"name\" \u2028 here"}, null, {"agency_id":"2","Name":"Capital <Key>","SLUG":"s","extra":[1,2]}]',
		    '[{"agency_id":"3","name":"A","slug":null,"parent_agency_id":"1","name":"Dup last"}, {"agency_id":null,"name":null}]'
		  ])[1 + g % 4]::jsonb,
		  ARRAY[(g % 20)::text], ARRAY['Agency <' || g % 20 || '> & Co'] || CASE WHEN g % 3 = 0 THEN ARRAY['Second Office ' || g % 5] ELSE '{}' END,
		  DATE '2020-01-01' + g * 5, 2020 + g / 73, (ARRAY['Q1', 'Q2', 'Q3', 'Q4', 'AMENDMENT'])[1 + g % 5],
		  CASE WHEN g % 6 = 0 THEN '2019-' || g END, CASE WHEN g % 2 = 0 THEN DATE '2021-01-01' + g END,
		  CASE WHEN g % 3 = 1 THEN DATE '2021-06-01' + g END,
		  CASE WHEN g % 4 = 0 THEN '{}' ELSE ARRAY['2060-AV' || g % 10, E'R\"<' || g || '>'] END,
		  CASE WHEN g % 5 = 0 THEN '{}' ELSE ARRAY['EPA-' || g % 3] END,
		  CASE WHEN g % 8 = 0 THEN NULL ELSE '91 FR ' || g END, CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 = 0 END,
		  CASE WHEN g % 9 = 0 THEN NULL ELSE 'https://example.test/h?x=' || g || '&y=<>' END, NULL,
		  CASE WHEN g % 10 = 0 THEN NULL ELSE 'https://example.test/s/' || g END
		FROM generate_series(1, 60) g`)
	e.exec(`INSERT INTO regulatory_filings (id, document_number, type, title, agencies, agency_names, publication_date, filing_year,
		filing_period, rins) VALUES
		('1900-00001', 'N1', 'NOTICE', 'Null element', '[]', '{"Unscannable Office"}', '1900-01-02', 1900, 'Q1', ARRAY['a', NULL]),
		('1900-00002', 'N2', 'NOTICE', 'Agencies not a list', '{"name":"x"}', '{"Unscannable Office"}', '1900-01-01', 1900, 'Q1', '{}')`)
	e.exec(`UPDATE regulatory_filings SET last_synced_at = '2026-01-02T03:04:05Z'::timestamptz + (filing_year || ' seconds')::interval`)
}

// seedAwkwardLobbying adds disclosures over a few agencies acted on whose activities JSON has NULL, missing,
// differently cased and duplicate members, NULL list elements and lobbyists, escapes and no activities at all;
// amounts from cents to 10^17 and NULL; unposted ones (the -infinity sort key); and, oldest of all, a NULL array
// element and activities that are not a list (values pgx cannot scan: the reference answers them).
func (e *env) seedAwkwardLobbying() {
	e.t.Helper()
	e.exec(`INSERT INTO lobbying_disclosures (id, filing_type, filing_type_display, filing_year, filing_period, registrant_id,
		registrant_name, client_id, client_name, client_description, income, expenses, posted_at, termination_date, issue_areas,
		lobbyist_names, agencies_acted_on, activities, document_url, source_url)
		SELECT 'ld-' || lpad(g::text, 4, '0'), (ARRAY['Q1', '1A', 'RR'])[1 + g % 3], CASE WHEN g % 3 = 0 THEN NULL ELSE 'Display <' || g || '>' END,
		  2020 + g % 3, (ARRAY['Q1', 'Q2', 'Q3', 'Q4', 'AMENDMENT'])[1 + g % 5], 'R' || g % 4,
		  (ARRAY['Reg & "Sons"', E'Tab\tReg\\', 'Ünï ☃'])[1 + g % 3] || ' ' || g % 4, 'C' || g % 6, 'Client <' || g % 6 || '>',
		  CASE WHEN g % 4 = 0 THEN NULL ELSE 'Desc ' || chr(8232) || g END,
		  CASE WHEN g % 5 = 0 THEN NULL ELSE (ARRAY[0.01, 12345.60, 123456789012345678.99, 0, 1e15])[1 + g % 5] END,
		  CASE WHEN g % 3 = 0 THEN NULL ELSE (ARRAY[99.99, 1e6, 0.5])[1 + g % 3] END,
		  CASE WHEN g % 7 = 0 THEN NULL ELSE TIMESTAMPTZ '2021-01-01T00:00:00Z' + (g * 36001.123456) * interval '1 second' END,
		  CASE WHEN g % 2 = 0 THEN DATE '2022-01-01' + g END,
		  CASE WHEN g % 4 = 0 THEN '{}' ELSE ARRAY['HCR', 'T<X>' || g % 3] END, ARRAY['Lob "' || g % 5 || '"'],
		  CASE WHEN g % 5 = 0 THEN '{}' ELSE ARRAY['Agency ' || g % 4, 'Second & <' || g % 2 || '>'] END,
		  (ARRAY[
		    '[]',
		    '[{"issue_area":"HCR","issue_area_name":"Health <Issues>","description":"d\u2028e","agencies_acted_on":["A","B & C"],"lobbyists":[{"lobbyist_id":"1","name":"Lob \"1\"","covered_position":null,"is_new":true}]}]',
		    '[{"issue_area":"TAX"}, null, {"Issue_Area":"DEF","description":null,"agencies_acted_on":null,"lobbyists":[null,{"name":"N","IS_NEW":false,"x":1}]}]',
		    '[{"issue_area":"A","issue_area":"Dup last","agencies_acted_on":["x",null],"lobbyists":[{"lobbyist_id":null,"name":null,"covered_position":"<p>"}]}]'
		  ])[1 + g % 4]::jsonb,
		  CASE WHEN g % 6 = 0 THEN NULL ELSE 'https://example.test/d?x=' || g || '&y=<>' END, NULL
		FROM generate_series(1, 60) g`)
	e.exec(`INSERT INTO lobbying_disclosures (id, filing_type, filing_year, filing_period, registrant_id, registrant_name,
		client_id, client_name, posted_at, issue_areas, agencies_acted_on, activities) VALUES
		('ld-bad1', 'Q1', 1900, 'Q1', 'R', 'R', 'C', 'C', '1900-01-02', ARRAY['a', NULL], '{"Unscannable Office"}', '[]'),
		('ld-bad2', 'Q1', 1900, 'Q1', 'R', 'R', 'C', 'C', '1900-01-01', '{}', '{"Unscannable Office"}', '{"issue_area":"x"}')`)
	e.exec(`UPDATE lobbying_disclosures SET last_synced_at = '2026-01-02T03:04:05Z'::timestamptz + (filing_year || ' seconds')::interval`)
}

// diffAnswer is what a client can tell apart in two answers.
type diffAnswer struct {
	status  int
	headers string
	body    []byte
}

func postGraphQL(t testing.TB, url string, body []byte, accept string) diffAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Civic-Identity", token(t))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var hdr strings.Builder
	for _, k := range []string{"Content-Type", "Vary", "X-Content-Type-Options", "Allow", "Cache-Control"} {
		hdr.WriteString(k + "=" + strings.Join(resp.Header.Values(k), ",") + "\n")
	}
	return diffAnswer{status: resp.StatusCode, headers: hdr.String(), body: b}
}

var diffMedia = []string{"application/json", "application/graphql-response+json"}

// requireSameAnswers sends body to both servers in both media types — twice to the compiled one, so both its
// first sight of a document (compiled after gqlgen validated it) and its cache hit are compared — and fails
// unless every answer equals the reference's byte for byte.
func (d *diffEnv) requireSameAnswers(t testing.TB, body []byte) {
	t.Helper()
	for _, media := range diffMedia {
		want := postGraphQL(t, d.ref.URL, body, media)
		for round := range 2 {
			got := postGraphQL(t, d.srv.URL, body, media)
			if got.status != want.status || got.headers != want.headers || !sameBody(got.body, want.body) {
				t.Fatalf("request %s (Accept %s, round %d):\ncompiled  %d %q\n%s\nreference %d %q\n%s",
					body, media, round, got.status, got.headers, got.body, want.status, want.headers, want.body)
			}
		}
	}
}

// sameBody compares two response bodies byte for byte — except that gqlgen resolves root fields
// concurrently and lists their errors in the order they finished, so two answers of the reference executor to
// one document can order "errors" differently: bodies with errors are equal when their "data" members are
// byte for byte and their errors are the same set.
func sameBody(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	type errorsBody struct {
		Errors []json.RawMessage `json:"errors"`
		Data   json.RawMessage   `json:"data"`
	}
	var x, y errorsBody
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || len(x.Errors) < 2 || len(x.Errors) != len(y.Errors) {
		return false
	}
	if !bytes.Equal(x.Data, y.Data) {
		return false
	}
	sortRaw := func(l []json.RawMessage) {
		slices.SortFunc(l, func(p, q json.RawMessage) int { return bytes.Compare(p, q) })
	}
	sortRaw(x.Errors)
	sortRaw(y.Errors)
	return slices.EqualFunc(x.Errors, y.Errors, func(p, q json.RawMessage) bool { return bytes.Equal(p, q) })
}

// compiledExecutions reads recordsd_graphql_executions_total{executor="compiled"} from api's metrics.
func compiledExecutions(t testing.TB, api *httpapi.Server) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	api.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, `recordsd_graphql_executions_total{executor="compiled"} `); ok {
			var n float64
			if err := json.Unmarshal([]byte(rest), &n); err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no compiled executions metric in\n%s", rec.Body.String())
	return 0
}
