package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	// A command name may hold spaces and ')': fields count from the last ')'. utime 1234, stime 56.
	line := "4242 (node ) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 11 0 500 0 0\n"
	got, err := parseStatTicks(line)
	if err != nil || got != 1290 {
		t.Fatalf("parseStatTicks = %d, %v; want 1290", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u s"} {
		if _, err := parseStatTicks(bad); err == nil {
			t.Errorf("parseStatTicks(%q): no error", bad)
		}
	}
	// This process's own line parses.
	if _, err := procTicks(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestBackendDelta(t *testing.T) {
	before := cpuSnapshot{backends: map[int]uint64{1: 10, 2: 20, 3: 30}}
	after := cpuSnapshot{backends: map[int]uint64{1: 15, 2: 20, 4: 7}} // 3 ended, 4 appeared
	ticks, ended := backendDelta(before, after)
	if ticks != 5+0+7 || ended != 1 {
		t.Fatalf("backendDelta = %d ticks, %d ended; want 12, 1", ticks, ended)
	}
}

func TestPercentileAndSpread(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	sortDurations(d)
	if p := percentile(d, 50); p != 50*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(d, 99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 50); p != 0 {
		t.Errorf("p50 of nothing = %v", p)
	}
	if s := spreadOf([]float64{3, 1, 2, 10}); s != (spread{2.5, 1, 10}) {
		t.Errorf("spreadOf = %+v", s)
	}
}

// TestSamePage: both decoders read their server's list, and a page that differs in one field is refused.
func TestSamePage(t *testing.T) {
	items := func(title string) string {
		var b strings.Builder
		for i := range 25 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":"hr` + string(rune('a'+i)) + `-118","number":7,"officialTitle":"` + title + `"}`)
		}
		return "[" + b.String() + "]"
	}
	serve := func(body string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	}
	rd := serve(`{"data":{"bills":{"items":` + items("A") + `,"nextCursor":"x"}}}`)
	defer rd.Close()
	same := serve(`{"data":{"allBills":{"nodes":` + items("A") + `,"pageInfo":{"hasNextPage":true}}}}`)
	defer same.Close()
	other := serve(`{"data":{"allBills":{"nodes":` + items("B") + `}}}`)
	defer other.Close()
	broken := serve(`{"data":null,"errors":[{"message":"no"}]}`)
	defer broken.Close()

	s := func(name, url, field, list string) *server {
		return newServer(name, url, 1, "x", body("{}"), pageItems(field, list), 1)
	}
	ctx := context.Background()
	if err := samePage(ctx, []*server{s("a", rd.URL, "bills", "items"), s("b", same.URL, "allBills", "nodes")}); err != nil {
		t.Fatal(err)
	}
	if err := samePage(ctx, []*server{s("a", rd.URL, "bills", "items"), s("b", other.URL, "allBills", "nodes")}); err == nil {
		t.Fatal("different pages: no error")
	}
	if err := samePage(ctx, []*server{s("a", broken.URL, "bills", "items")}); err == nil {
		t.Fatal("errors page: no error")
	}
	// A load request that meets a GraphQL error fails the round.
	if _, err := s("b", broken.URL, "allBills", "nodes").post(ctx); err == nil {
		t.Fatal("post of an errors page: no error")
	}
}

// TestReport: the table has one row per server and the paired ratios divide round by round.
func TestReport(t *testing.T) {
	servers := []*server{{name: "recordsd"}, {name: "PostGraphile"}}
	r := func(server, round, pages int, cpu time.Duration) roundResult {
		return roundResult{server: server, round: round, pages: pages, elapsed: time.Second, p50: time.Millisecond,
			p99: 2 * time.Millisecond, serverCPU: cpu, pgCPU: cpu / 4, backends: 4}
	}
	results := []roundResult{r(0, 1, 100, 100*time.Millisecond), r(1, 1, 50, 100*time.Millisecond),
		r(0, 2, 200, 200*time.Millisecond), r(1, 2, 50, 150*time.Millisecond)}
	if got := pairedRatios(results, 0, 1, metrics[0]); len(got) != 2 || got[0] != 0.5 || got[1] != 0.25 {
		t.Fatalf("paired req/s ratios = %v, want [0.5 0.25]", got)
	}
	var b strings.Builder
	report(&b, servers, results, true)
	for _, want := range []string{"| recordsd | 150 (100–200) |", "| PostGraphile | 50 (50–50) |",
		"PostGraphile ÷ recordsd, round by round, median (min–max): req/s 0.38× (0.25–0.50), server CPU/page 2.50× (2.00–3.00)",
		"| 2 | PostGraphile | 50 | 4 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
