package main

// The Markdown report.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

func us(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// perMessage is CPU µs per delivered message; "—" below 1 000 messages,
// where the 10 ms ticks of /proc/<pid>/stat say nothing per message.
func perMessage(cpu time.Duration, got int64) string {
	if cpu <= 0 || got < 1000 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(cpu.Microseconds())/float64(got))
}

// baselineOf finds the same round's and shape's baseline cell.
func baselineOf(cfg config, rs []result, i int) *result {
	per := len(cfg.shapes) * len(cfg.targets)
	round := i / per
	for j := round * per; j < min(len(rs), (round+1)*per); j++ {
		if rs[j].shape == rs[i].shape && rs[j].target == cfg.baseline && rs[j].err == "" {
			return &rs[j]
		}
	}
	return nil
}

func report(w io.Writer, cfg config, rs []result) {
	fmt.Fprintf(w, "Every subscription is `%s`. %d events per cell (unless its shape says `:EVENTS`), each published once the previous one reached every subscription and %v passed. "+
		"Latency = the engine's publish (timestamped in the engine process) → the client has read the `next` frame: p50/p99 over every receipt of every event; "+
		"*last* p50/p99 over events of the last subscription's receipt (under 100 events p99 is the slowest). "+
		"Engine subs = subscriptions the engine held for the cell's clients. CPU = process utime+stime (10 ms ticks) over the events ÷ messages delivered to clients (— under 1 000 messages).\n\n",
		subscribeQuery, cfg.events, cfg.interval)
	per := len(cfg.shapes) * len(cfg.targets)

	fmt.Fprintln(w, "| round | target | shape | sockets×subs | engine subs | deliveries | p50 µs | p99 µs | last p50 µs | last p99 µs | last p99 ÷ "+cfg.baseline+" | proxy CPU µs/msg | engine CPU µs/msg |")
	fmt.Fprintln(w, "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, r := range rs {
		if r.err != "" {
			fmt.Fprintf(w, "| %d | %s | %s | %s | — | failed: %s | | | | | | | |\n", i/per+1, r.target, r.shape.name, r.shape.dims(), cell1(r.err))
			continue
		}
		rel := "—"
		if b := baselineOf(cfg, rs, i); b != nil && b != &rs[i] {
			rel = ratio(r.last99, b.last99)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %d | %d / %d%s | %s | %s | %s | %s | %s | %s | %s |\n",
			i/per+1, r.target, r.shape.name, r.shape.dims(), r.engineSubs, r.got, r.want, notes(r), us(r.p50), us(r.p99),
			us(r.last50), us(r.last99), rel, perMessage(r.cpu, r.got), perMessage(r.engineCPU, r.got))
	}

	fmt.Fprintln(w, "\nMemory of each proxy with the cell's sockets open (after the warm-up), Δ from before the cell, ÷ subscriptions; heap+stack after a forced GC:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | target | shape | sockets×subs | open s | warm-up events | proxy RSS Δ KiB/sub | proxy heap+stack Δ KiB/sub | proxy goroutines Δ/socket |")
	fmt.Fprintln(w, "|---:|---|---|---|---:|---:|---:|---:|---:|")
	for i, r := range rs {
		if r.err != "" {
			continue
		}
		n := float64(r.shape.sockets * r.shape.subs)
		mem := func(before, after int64) string {
			if before == 0 && after == 0 {
				return "—"
			}
			return fmt.Sprintf("%.1f", float64(after-before)/1024/n)
		}
		gor := "—"
		if r.gorBefore != 0 || r.gorAfter != 0 {
			gor = fmt.Sprintf("%.2f", float64(r.gorAfter-r.gorBefore)/float64(r.shape.sockets))
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %.2f | %d | %s | %s | %s |\n", i/per+1, r.target, r.shape.name, r.shape.dims(),
			r.openTime.Seconds(), r.warmups, mem(r.rssBefore, r.rssAfter), mem(r.heapBefore, r.heapAfter), gor)
	}
	var notesOut []string
	for i, r := range rs {
		if r.note != "" {
			notesOut = append(notesOut, fmt.Sprintf("round %d %s %s: %s", i/per+1, r.target, r.shape, r.note))
		}
	}
	if len(notesOut) > 0 {
		fmt.Fprintf(w, "\nNotes: %s.\n", strings.Join(notesOut, "; "))
	}
	compare(w, cfg, rs)
}

// compare prints every target against the baseline per shape: the median
// over rounds of the per-round difference and ratio.
func compare(w io.Writer, cfg config, rs []result) {
	if len(cfg.targets) < 2 {
		return
	}
	fmt.Fprintf(w, "\nAgainst %s, per shape (median over rounds of the per-round difference or ratio):\n\n", cfg.baseline)
	fmt.Fprintln(w, "| shape | sockets×subs | target | Δ p50 µs | Δ p99 µs | Δ last p99 µs | last p99 ratio | engine subs (target vs baseline) | target Δ p99 | verdict |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---|---|")
	for _, sh := range cfg.shapes {
		for _, t := range cfg.targets {
			if t.name == cfg.baseline {
				continue
			}
			var d50, d99, dl, rl []int64
			subs := "—"
			for i := range rs {
				c := &rs[i]
				if c.shape != sh || c.target != t.name || c.err != "" {
					continue
				}
				a := baselineOf(cfg, rs, i)
				if a == nil {
					continue
				}
				d50 = append(d50, (c.p50 - a.p50).Microseconds())
				d99 = append(d99, (c.p99 - a.p99).Microseconds())
				dl = append(dl, (c.last99 - a.last99).Microseconds())
				if a.last99 > 0 {
					rl = append(rl, int64(1000*float64(c.last99)/float64(a.last99)))
				}
				subs = fmt.Sprintf("%d vs %d", c.engineSubs, a.engineSubs)
			}
			if len(d99) == 0 {
				continue
			}
			// The ≤ 1 ms added p99 target is one subscriber's, one event at a
			// time; a broadcast's p99 is its fan-out time (BENCHMARKS.md).
			m99 := median(d99)
			goal, verdict := "—", "—"
			if sh.sockets == 1 && sh.subs == 1 {
				goal, verdict = "≤ 1000 µs", "**met**"
				if m99 > 1000 {
					verdict = "**not met**"
				}
			}
			rat := "—"
			if len(rl) > 0 {
				rat = fmt.Sprintf("%.2f", float64(median(rl))/1000)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %s | %s | %s | %s |\n",
				sh.name, sh.dims(), t.name, median(d50), m99, median(dl), rat, subs, goal, verdict)
		}
	}
}

func median(v []int64) int64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// cell1 keeps an error on one table line.
func cell1(s string) string {
	return strings.NewReplacer("|", "/", "\n", " ").Replace(s)
}

func notes(r result) string {
	var n []string
	if r.bad > 0 {
		n = append(n, fmt.Sprintf("%d bad frames", r.bad))
	}
	if r.incomplete > 0 {
		n = append(n, fmt.Sprintf("%d events short", r.incomplete))
	}
	if len(n) == 0 {
		return ""
	}
	return " (" + strings.Join(n, ", ") + ")"
}
