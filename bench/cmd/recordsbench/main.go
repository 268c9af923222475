// Command recordsbench measures end-to-end latency of recordsd's GraphQL endpoint (HTTP POST, keep-alive):
// first page, a page 1000 pages deep (reached once by walking nextCursor, then requested repeatedly), every
// filter of every family, and bills(q:) with a rare and a common term, at several client counts with a fixed
// number of requests each. It prints a Markdown table. Run by bench/run.sh backend (make bench BENCH=backend).
//
//	recordsbench --url http://127.0.0.1:8081/graphql [--requests 400] [--clients 1,4] [--depth 1000]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type scenario struct {
	name      string
	field     string         // root field
	input     map[string]any // input object
	selection string         // item selection
	target    string         // which target it is checked against, if any
}

func (s scenario) body(cursor string) []byte {
	in := map[string]any{}
	for k, v := range s.input {
		in[k] = v
	}
	if cursor != "" {
		in["cursor"] = cursor
	}
	typ := map[string]string{"bills": "BillsInput", "members": "MembersInput", "regulatoryFilings": "RegulatoryFilingsInput",
		"federalBudgets": "FederalBudgetsInput!", "lobbyingDisclosures": "LobbyingDisclosuresInput"}[s.field]
	q := fmt.Sprintf("query Q($in: %s) { %s(input: $in) { items { %s } nextCursor } }", typ, s.field, s.selection)
	b, _ := json.Marshal(map[string]any{"query": q, "variables": map[string]any{"in": in}})
	return b
}

const (
	billSel  = "id congress type number officialTitle introducedDate memberName memberBioguideId memberByCongressKey committeeNames sourceUrl lastSyncedAt"
	memSel   = "member_id bioguide_id name state terms { congress chamber party }"
	regSel   = "id document_number type title agency_id agency_name publication_date filing_year filing_period rins docket_ids"
	budSel   = "id dataset fiscal_year congress month agency_name bureau_code account_title amount fiscal_year_to_date_amount"
	lobbySel = "id filing_type filing_year filing_period registrant_id registrant_name client_id client_name issue_areas lobbyist_names agencies_acted_on"
)

func scenarios() []scenario {
	b := func(name string, in map[string]any, target string) scenario {
		return scenario{name: name, field: "bills", input: in, selection: billSel, target: target}
	}
	m := func(name string, in map[string]any) scenario {
		return scenario{name: name, field: "members", input: in, selection: memSel, target: "keyset"}
	}
	r := func(name string, in map[string]any) scenario {
		return scenario{name: name, field: "regulatoryFilings", input: in, selection: regSel, target: "keyset"}
	}
	f := func(name string, in map[string]any) scenario {
		return scenario{name: name, field: "federalBudgets", input: in, selection: budSel, target: "keyset"}
	}
	l := func(name string, in map[string]any) scenario {
		return scenario{name: name, field: "lobbyingDisclosures", input: in, selection: lobbySel, target: "keyset"}
	}
	return []scenario{
		b("bills first page", map[string]any{}, "first"),
		b("bills page 1000 deep", map[string]any{}, "deep"),
		b("bills congress=118", map[string]any{"congress": 118}, "keyset"),
		b("bills type=hjres", map[string]any{"type": "hjres"}, "keyset"),
		b("bills congress=110 type=s", map[string]any{"congress": 110, "type": "s"}, "keyset"),
		b("bills q=lighthouse (rare)", map[string]any{"q": "lighthouse"}, "q-rare"),
		b("bills q=health (common)", map[string]any{"q": "health"}, "q-common"),
		m("members (no filter)", map[string]any{}),
		m("members state=VT", map[string]any{"state": "VT"}),
		m("members chamber=senate", map[string]any{"chamber": "senate"}),
		m("members congress=118", map[string]any{"congress": 118}),
		m("members congress=118 chamber=senate", map[string]any{"congress": 118, "chamber": "senate"}),
		r("regulatory (no filter)", map[string]any{}),
		r("regulatory agency_id=145", map[string]any{"agency_id": "145"}),
		r("regulatory agency_name=aviation", map[string]any{"agency_name": "aviation"}),
		r("regulatory type=PRESIDENTIAL_DOCUMENT", map[string]any{"type": "PRESIDENTIAL_DOCUMENT"}),
		r("regulatory filing_year=2024", map[string]any{"filing_year": 2024}),
		r("regulatory filing_period=AMENDMENT", map[string]any{"filing_period": "AMENDMENT"}),
		r("regulatory rIN=2060-AV12", map[string]any{"rIN": "2060-AV12"}),
		r("regulatory docket_id=FAA-2024-0123", map[string]any{"docket_id": "FAA-2024-0123"}),
		f("budgets APPROPRIATIONS", map[string]any{"dataset": "APPROPRIATIONS"}),
		f("budgets OUTLAYS", map[string]any{"dataset": "OUTLAYS"}),
		f("budgets APPROPRIATIONS congress=118", map[string]any{"dataset": "APPROPRIATIONS", "congress": 118}),
		f("budgets OUTLAYS fiscal_year=2025", map[string]any{"dataset": "OUTLAYS", "fiscal_year": 2025}),
		f("budgets OUTLAYS month=2025-06", map[string]any{"dataset": "OUTLAYS", "month": "2025-06"}),
		f("budgets APPROPRIATIONS agency=defense", map[string]any{"dataset": "APPROPRIATIONS", "agency": "defense"}),
		f("budgets APPROPRIATIONS bureau_code=05", map[string]any{"dataset": "APPROPRIATIONS", "bureau_code": "05"}),
		f("budgets OUTLAYS account=salaries", map[string]any{"dataset": "OUTLAYS", "account": "salaries"}),
		l("lobbying (no filter)", map[string]any{}),
		l("lobbying registrant_name=llp", map[string]any{"registrant_name": "llp"}),
		l("lobbying registrant_id=400003", map[string]any{"registrant_id": "400003"}),
		l("lobbying client_name=university", map[string]any{"client_name": "university"}),
		l("lobbying client_id=1", map[string]any{"client_id": "1"}),
		l("lobbying lobbyist_name=smith", map[string]any{"lobbyist_name": "smith"}),
		l("lobbying filing_year=2024", map[string]any{"filing_year": 2024}),
		l("lobbying filing_period=AMENDMENT", map[string]any{"filing_period": "AMENDMENT"}),
		l("lobbying issue_area=HCR", map[string]any{"issue_area": "HCR"}),
		l("lobbying agency_acted_on=EPA", map[string]any{"agency_acted_on": "Environmental Protection Agency (EPA)"}),
	}
}

type client struct {
	url    string
	http   *http.Client
	header http.Header
}

// page posts one request and returns the item count and nextCursor; any GraphQL error is an error.
func (c *client) page(ctx context.Context, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var out struct {
		Data map[string]struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor *string           `json:"nextCursor"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, "", fmt.Errorf("decode: %w", err)
	}
	if len(out.Errors) > 0 {
		return 0, "", errors.New("graphql error: " + out.Errors[0].Message)
	}
	for _, p := range out.Data {
		next := ""
		if p.NextCursor != nil {
			next = *p.NextCursor
		}
		return len(p.Items), next, nil
	}
	return 0, "", errors.New("no data")
}

// timed posts one request and reads its whole answer into buf (grown as needed, returned for reuse), and checks
// it without decoding it: status 200, and as long as the first answer, which page decoded and found whole
// (size 0: any length). The page is the same on every repeat, so its length only changes on an error answer.
// Decoding every answer cost the load generator more CPU per request than recordsd spent serving it, on the
// cores they share (docs/benchmarks-log.md, "The load generator's share of the cores").
func (c *client) timed(ctx context.Context, body, buf []byte, size int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return buf, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return buf, err
	}
	defer resp.Body.Close()
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return buf, err
	}
	raw := b.Bytes()
	if resp.StatusCode != http.StatusOK {
		return raw, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	if size > 0 && len(raw) != size {
		return raw, fmt.Errorf("answer of %d bytes where the first had %d: %.200s", len(raw), size, raw)
	}
	return raw, nil
}

type result struct {
	name          string
	clients, n    int
	items         int
	p50, p99, max time.Duration
	target        string
}

func measure(ctx context.Context, c *client, name, target string, body []byte, clients, n int) (result, error) {
	items, _, err := c.page(ctx, body)
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	first, err := c.timed(ctx, body, nil, 0)
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	// Warm-up with as many clients as the timed run, 10 requests each: every keep-alive connection, and every
	// recordsd pool connection those need, is open and has run the statement past PostgreSQL's first five custom
	// plans (plan_cache_mode=auto) before timing starts. One sequential client warmed a single connection, and the
	// four-client rows timed three connections being opened and their first plans.
	var wg sync.WaitGroup
	warm := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for range 10 {
				var err error
				if buf, err = c.timed(ctx, body, buf, len(first)); err != nil {
					warm <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(warm)
	if err := <-warm; err != nil {
		return result{}, fmt.Errorf("%s: warm-up: %w", name, err)
	}
	lat := make([]time.Duration, n)
	errc := make(chan error, clients)
	per := n / clients
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var buf []byte
			for i := w * per; i < (w+1)*per; i++ {
				t0 := time.Now()
				var err error
				if buf, err = c.timed(ctx, body, buf, len(first)); err != nil {
					errc <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	lat = lat[:per*clients]
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return result{name: name, clients: clients, n: len(lat), items: items, p50: q(0.50), p99: q(0.99), max: lat[len(lat)-1], target: target}, nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8081/graphql", "recordsd GraphQL endpoint")
	requests := flag.Int("requests", 400, "timed requests per scenario and client count")
	clientsFlag := flag.String("clients", "1,4", "comma-separated concurrent client counts")
	depth := flag.Int("depth", 1000, "page number of the deep-page scenario (reached by walking nextCursor)")
	identity := flag.String("identity-header", "", "optional X-Civic-Identity value to send")
	only := flag.String("only", "", "run only the scenarios whose name matches this regular expression (default: all)")
	flag.Parse()
	match, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordsbench: bad --only:", err)
		os.Exit(2)
	}
	var counts []int
	for _, s := range strings.Split(*clientsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "recordsbench: bad --clients")
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	c := &client{url: *url, header: http.Header{}, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}}
	if *identity != "" {
		c.header.Set("X-Civic-Identity", *identity)
	}
	ctx := context.Background()
	if err := run(ctx, c, counts, *requests, *depth, match); err != nil {
		fmt.Fprintln(os.Stderr, "recordsbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *client, counts []int, requests, depth int, match *regexp.Regexp) error {
	var results []result
	for _, s := range scenarios() {
		if !match.MatchString(s.name) {
			continue
		}
		cursor := ""
		if s.target == "deep" {
			t0 := time.Now()
			for p := 1; p < depth; p++ {
				_, next, err := c.page(ctx, s.body(cursor))
				if err != nil {
					return fmt.Errorf("walking to page %d: %w", depth, err)
				}
				if next == "" {
					return fmt.Errorf("only %d pages", p)
				}
				cursor = next
			}
			fmt.Fprintf(os.Stderr, "walked to page %d in %s\n", depth, time.Since(t0).Round(time.Millisecond))
		}
		for _, n := range counts {
			r, err := measure(ctx, c, s.name, s.target, s.body(cursor), n, requests)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%-45s clients=%d p50=%sms p99=%sms\n", r.name, r.clients, ms(r.p50), ms(r.p99))
			results = append(results, r)
		}
	}
	report(os.Stdout, results, counts)
	return nil
}

func report(w io.Writer, results []result, counts []int) {
	fmt.Fprintln(w, "| Query (25 items/page unless fewer match) | Clients | Requests | Items | p50 ms | p99 ms | max ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s | %s |\n", r.name, r.clients, r.n, r.items, ms(r.p50), ms(r.p99), ms(r.max))
	}
	fmt.Fprintln(w)
	if len(results) < len(counts)*len(scenarios()) {
		return // --only: the targets need every scenario
	}
	fmt.Fprintln(w, "Targets (keyset page p99, deep page against the first, full-text search p99):")
	fmt.Fprintln(w)
	maxC := counts[len(counts)-1]
	var worstKeyset result
	byName := map[string]result{}
	for _, r := range results {
		if r.clients != maxC {
			continue
		}
		byName[r.target+"/"+r.name] = r
		if (r.target == "keyset" || r.target == "first") && r.p99 > worstKeyset.p99 {
			worstKeyset = r
		}
	}
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	var first, deep, common result
	for _, r := range byName {
		switch r.target {
		case "first":
			first = r
		case "deep":
			deep = r
		case "q-common":
			common = r
		}
	}
	fmt.Fprintf(w, "- Keyset page p99 ≤ 3 ms at %d clients: first page p99 %s ms %s; worst filtered page (%s) p99 %s ms %s.\n",
		maxC, ms(first.p99), verdict(first.p99 <= 3*time.Millisecond), worstKeyset.name, ms(worstKeyset.p99), verdict(worstKeyset.p99 <= 3*time.Millisecond))
	if first.p50 > 0 {
		fmt.Fprintf(w, "- Deep page (1000 pages in) within 1.5× of the first page at %d clients: p50 ratio %.2f, p99 ratio %.2f %s.\n",
			maxC, float64(deep.p50)/float64(first.p50), float64(deep.p99)/float64(first.p99), verdict(float64(deep.p99) <= 1.5*float64(first.p99)))
	}
	fmt.Fprintf(w, "- bills(q:) common term p99 ≤ 25 ms at %d clients: p99 %s ms %s.\n", maxC, ms(common.p99), verdict(common.p99 <= 25*time.Millisecond))
}
