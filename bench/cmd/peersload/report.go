package main

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// metric is one column of the report: its heading and how a round gives its value.
type metric struct {
	heading string
	format  string
	value   func(roundResult) float64
}

func perPage(d time.Duration, pages int) float64 {
	if pages == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(pages)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

var metrics = []metric{
	{"req/s", "%.0f", func(r roundResult) float64 { return float64(r.pages) / r.elapsed.Seconds() }},
	{"p50 ms", "%.2f", func(r roundResult) float64 { return msOf(r.p50) }},
	{"p99 ms", "%.2f", func(r roundResult) float64 { return msOf(r.p99) }},
	{"server CPU µs/page", "%.0f", func(r roundResult) float64 { return perPage(r.serverCPU, r.pages) }},
	{"PostgreSQL CPU µs/page", "%.0f", func(r roundResult) float64 { return perPage(r.pgCPU, r.pages) }},
	{"server + PostgreSQL µs/page", "%.0f", func(r roundResult) float64 { return perPage(r.serverCPU+r.pgCPU, r.pages) }},
}

// spread is the median and range of one metric over one server's rounds.
type spread struct{ median, lo, hi float64 }

func spreadOf(vals []float64) spread {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{med, s[0], s[n-1]}
}

func report(w io.Writer, servers []*server, results []roundResult, rawRounds bool) {
	spreads := make([][]spread, len(servers))
	ended := make([]int, len(servers))
	for i := range servers {
		for _, m := range metrics {
			var vals []float64
			for _, r := range results {
				if r.server == i {
					vals = append(vals, m.value(r))
				}
			}
			spreads[i] = append(spreads[i], spreadOf(vals))
		}
		for _, r := range results {
			if r.server == i {
				ended[i] += r.ended
			}
		}
	}

	fmt.Fprint(w, "| server |")
	for _, m := range metrics {
		fmt.Fprintf(w, " %s |", m.heading)
	}
	fmt.Fprint(w, "\n|---|")
	for range metrics {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for i, s := range servers {
		fmt.Fprintf(w, "| %s |", s.name)
		for j, m := range metrics {
			sp := spreads[i][j]
			fmt.Fprintf(w, " "+m.format+" ("+m.format+"–"+m.format+") |", sp.median, sp.lo, sp.hi)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Cells: median of the rounds (min–max).")
	// Paired ratios: each round of a server against the first server's round just before it, so a load swing
	// on the shared machine moves both sides of a ratio.
	for i := 1; i < len(servers); i++ {
		fmt.Fprintf(w, "%s ÷ %s, round by round, median (min–max):", servers[i].name, servers[0].name)
		for j, m := range []int{0, 3, 4, 5} {
			sp := spreadOf(pairedRatios(results, 0, i, metrics[m]))
			sep := ","
			if j == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %s %.2f× (%.2f–%.2f)", sep, ratioName[m], sp.median, sp.lo, sp.hi)
		}
		fmt.Fprintln(w, ".")
	}
	for i, s := range servers {
		if ended[i] > 0 {
			fmt.Fprintf(w, "%s: %d PostgreSQL backends ended during measured rounds; their CPU is not counted.\n", s.name, ended[i])
		}
	}

	if !rawRounds {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| round | server | pages | backends |")
	for _, m := range metrics {
		fmt.Fprintf(w, " %s |", m.heading)
	}
	fmt.Fprint(w, "\n|---:|---|---:|---:|")
	for range metrics {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %s | %d | %d |", r.round, servers[r.server].name, r.pages, r.backends)
		for _, m := range metrics {
			fmt.Fprintf(w, " "+m.format+" |", m.value(r))
		}
		fmt.Fprintln(w)
	}
}

var ratioName = map[int]string{0: "req/s", 3: "server CPU/page", 4: "PostgreSQL CPU/page", 5: "together"}

// pairedRatios is metric m of server b over server a, round by round.
func pairedRatios(results []roundResult, a, b int, m metric) []float64 {
	base := map[int]float64{}
	for _, r := range results {
		if r.server == a {
			base[r.round] = m.value(r)
		}
	}
	var out []float64
	for _, r := range results {
		if v, ok := base[r.round]; r.server == b && ok && v != 0 {
			out = append(out, m.value(r)/v)
		}
	}
	if len(out) == 0 {
		return []float64{0}
	}
	return out
}
