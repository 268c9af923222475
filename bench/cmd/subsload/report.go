package main

// The Markdown report.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

func us(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

func report(w io.Writer, cfg config, rs []result) {
	fmt.Fprintf(w, "%d events per cell, each published once the previous one reached every subscriber and %v passed; latency = publish on the in-process engine → the client has read the `next` frame, over every delivery of every event.\n\n",
		cfg.events, cfg.interval)
	fmt.Fprintln(w, "| round | target | sockets×subs | open s | deliveries | p50 µs | p99 µs | max µs | proxy RSS Δ KiB/sub | proxy heap+stack Δ KiB/sub | proxy goroutines Δ/socket | proxy CPU µs/delivery |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	per := len(cfg.shapes) * len(cfg.targets)
	for i, r := range rs {
		n := float64(r.shape.sockets * r.shape.subs)
		mem := func(before, after int64) string {
			if before == 0 && after == 0 {
				return "—"
			}
			return fmt.Sprintf("%.1f", float64(after-before)/1024/n)
		}
		gor, cpu := "—", "—"
		if r.gorBefore != 0 || r.gorAfter != 0 {
			gor = fmt.Sprintf("%.2f", float64(r.gorAfter-r.gorBefore)/float64(r.shape.sockets))
		}
		if r.cpu > 0 && r.got > 0 {
			cpu = fmt.Sprintf("%.2f", float64(r.cpu.Microseconds())/float64(r.got))
		}
		fmt.Fprintf(w, "| %d | %s | %s | %.2f | %d / %d%s | %s | %s | %s | %s | %s | %s | %s |\n",
			i/per+1, r.target, r.shape, r.openTime.Seconds(), r.got, r.want, badNote(r.bad), us(r.p50), us(r.p99), us(r.max),
			mem(r.rssBefore, r.rssAfter), mem(r.heapBefore, r.heapAfter), gor, cpu)
	}
	if len(cfg.targets) < 2 {
		return
	}
	base, cand := cfg.targets[0].name, cfg.targets[len(cfg.targets)-1].name
	fmt.Fprintf(w, "\nAdded latency %s − %s per shape (median over rounds of the per-round difference):\n\n", cand, base)
	fmt.Fprintln(w, "| sockets×subs | Δ p50 µs | Δ p99 µs | target Δ p99 | verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---|---|")
	for _, sh := range cfg.shapes {
		var d50, d99 []int64
		for r := range cfg.rounds {
			var a, c *result
			for i := range rs[r*per : (r+1)*per] {
				x := &rs[r*per+i]
				if x.shape == sh && x.target == base {
					a = x
				}
				if x.shape == sh && x.target == cand {
					c = x
				}
			}
			if a != nil && c != nil {
				d50 = append(d50, (c.p50 - a.p50).Microseconds())
				d99 = append(d99, (c.p99 - a.p99).Microseconds())
			}
		}
		if len(d99) == 0 {
			continue
		}
		slices.Sort(d50)
		slices.Sort(d99)
		m50, m99 := d50[len(d50)/2], d99[len(d99)/2]
		verdict := "**met**"
		if m99 > 1000 {
			verdict = "**not met**"
		}
		fmt.Fprintf(w, "| %s | %d | %d | ≤ 1000 µs | %s |\n", sh, m50, m99, verdict)
	}
}

func badNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d bad frames)", n)
}
