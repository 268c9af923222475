package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// median of xs (mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// find returns the cell of target at conns in round.
func (r results) find(target string, conns, round int) (cell, bool) {
	for _, c := range r.cells {
		if c.target == target && c.conns == conns && c.round == round {
			return c, true
		}
	}
	return cell{}, false
}

// pairedOf is the median over rounds of f(cand cell, base cell) at conns.
func (r results) pairedOf(rounds int, cand, base string, conns int, f func(c, b cell) float64) float64 {
	var xs []float64
	for round := 1; round <= rounds; round++ {
		c, ok1 := r.find(cand, conns, round)
		b, ok2 := r.find(base, conns, round)
		if ok1 && ok2 {
			xs = append(xs, f(c, b))
		}
	}
	return median(xs)
}

// writeRatios prints the --ratio rows: per connection count, the median over
// rounds of each round's cand ÷ base throughput, p50 and p99.
func writeRatios(b *strings.Builder, cfg config, r results) {
	if len(cfg.ratios) == 0 {
		return
	}
	b.WriteString("Ratios: median over rounds of the per-round value (the cells of a round ran within seconds of each other).\n\n")
	b.WriteString("| ratio | conns | throughput | p50 | p99 | throughput goal | verdict |\n|---|---:|---:|---:|---:|---|---|\n")
	for _, n := range cfg.conns {
		for _, rt := range cfg.ratios {
			thr := r.pairedOf(cfg.rounds, rt.cand, rt.base, n, func(c, base cell) float64 { return c.rps() / base.rps() })
			p50 := r.pairedOf(cfg.rounds, rt.cand, rt.base, n, func(c, base cell) float64 { return float64(c.p50) / float64(base.p50) })
			p99 := r.pairedOf(cfg.rounds, rt.cand, rt.base, n, func(c, base cell) float64 { return float64(c.p99) / float64(base.p99) })
			goal, v := "—", "—"
			if rt.goal > 0 {
				goal, v = fmt.Sprintf("≥ %g×", rt.goal), verdict(thr >= rt.goal)
			}
			fmt.Fprintf(b, "| %s ÷ %s | %d | %.2f× | %.2f× | %.2f× | %s | %s |\n", rt.cand, rt.base, n, thr, p50, p99, goal, v)
		}
	}
	b.WriteString("\n")
}

// paired is the median over rounds of f(candidate cell, baseline cell):
// each round's two cells ran within seconds of each other, so the pair shares the
// machine's load of that moment.
func (r results) paired(cfg config, conns int, f func(cand, base cell) float64) (float64, bool) {
	var xs []float64
	for round := 1; round <= cfg.rounds; round++ {
		c, ok1 := r.find(cfg.compare, conns, round)
		b, ok2 := r.find(cfg.baseline, conns, round)
		if ok1 && ok2 {
			xs = append(xs, f(c, b))
		}
	}
	return median(xs), len(xs) > 0
}

// summary is the medians of one target at one connection count.
type summary struct {
	rps, p50, p99 float64 // req/s, µs, µs
	errors        int     // sum over rounds
	requests      int     // sum over rounds
	cpu           map[string]float64
	redis         float64 // commands per request; -1 not measured
}

func (r results) summarize(cfg config, target string, conns int) summary {
	var rps, p50, p99, redis []float64
	cpu := map[string][]float64{}
	s := summary{cpu: map[string]float64{}, redis: -1}
	for _, c := range r.cells {
		if c.target != target || c.conns != conns {
			continue
		}
		rps = append(rps, c.rps())
		p50 = append(p50, us(c.p50))
		p99 = append(p99, us(c.p99))
		s.errors += c.errors
		s.requests += c.requests
		for name := range c.cpu {
			if v, ok := c.cpuPerReq(name); ok {
				cpu[name] = append(cpu[name], v)
			}
		}
		if c.redisCmd >= 0 && c.requests > 0 {
			redis = append(redis, float64(c.redisCmd)/float64(c.requests))
		}
	}
	s.rps, s.p50, s.p99 = median(rps), median(p50), median(p99)
	for name, xs := range cpu {
		s.cpu[name] = median(xs)
	}
	if len(redis) > 0 {
		s.redis = median(redis)
	}
	return s
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

// writeReport prints the Markdown report: ratios first, then medians, then
// every round's throughput.
func writeReport(w io.Writer, cfg config, r results) error {
	var b strings.Builder
	lo, hi := slices.Min(cfg.conns), slices.Max(cfg.conns)
	hasPair := false
	for _, t := range cfg.targets {
		if t.name == cfg.compare {
			for _, u := range cfg.targets {
				hasPair = hasPair || u.name == cfg.baseline
			}
		}
	}
	mixText := fmt.Sprintf("Mix `%s` (%d requests", cfg.mixName, len(cfg.mix))
	if cfg.label != cfg.mixName {
		mixText = fmt.Sprintf("`%s`: the requests of mix `%s` (%d", cfg.label, cfg.mixName, len(cfg.mix))
	}
	fmt.Fprintf(&b, "%s, round-robin per connection); %d rounds × %v measured (after %v warm-up) per target and connection count, interleaved in the order %s; %s → %s.\n\n",
		mixText, cfg.rounds, cfg.duration, cfg.warmup, targetNames(cfg), r.start.UTC().Format("15:04:05"), r.end.UTC().Format("15:04:05 UTC"))
	writeCredentials(&b, cfg)
	if hasPair {
		fmt.Fprintf(&b, "Ratios %s / %s: median over rounds of the per-round value (the two cells of a round ran within seconds of each other).\n\n", cfg.compare, cfg.baseline)
		b.WriteString("| measure | conns | value | target | verdict |\n|---|---:|---:|---|---|\n")
		thr, _ := r.paired(cfg, hi, func(c, base cell) float64 { return c.rps() / base.rps() })
		fmt.Fprintf(&b, "| throughput %s / %s | %d | %.3f | ≥ %.2f | %s |\n", cfg.compare, cfg.baseline, hi, thr, mainGoal, verdict(thr >= mainGoal))
		d50, _ := r.paired(cfg, lo, func(c, base cell) float64 { return us(c.p50 - base.p50) })
		fmt.Fprintf(&b, "| added p50 latency | %d | %.0f µs | ≤ 50 µs | %s |\n", lo, d50, verdict(d50 <= 50))
		d99, _ := r.paired(cfg, lo, func(c, base cell) float64 { return us(c.p99 - base.p99) })
		fmt.Fprintf(&b, "| added p99 latency | %d | %.0f µs | ≤ 250 µs | %s |\n", lo, d99, verdict(d99 <= 250))
		p99r, _ := r.paired(cfg, hi, func(c, base cell) float64 { return float64(c.p99) / float64(base.p99) })
		errs := r.summarize(cfg, cfg.compare, hi).errors
		fmt.Fprintf(&b, "| p99 %s / %s | %d | %.3f | ≤ 1.2 | %s |\n", cfg.compare, cfg.baseline, hi, p99r, verdict(p99r <= 1.2))
		fmt.Fprintf(&b, "| %s errors (all rounds) | %d | %d | 0 | %s |\n", cfg.compare, hi, errs, verdict(errs == 0))
		if lo != hi {
			thr1, _ := r.paired(cfg, lo, func(c, base cell) float64 { return c.rps() / base.rps() })
			fmt.Fprintf(&b, "| throughput %s / %s (for information) | %d | %.3f | — | — |\n", cfg.compare, cfg.baseline, lo, thr1)
			d50h, _ := r.paired(cfg, hi, func(c, base cell) float64 { return us(c.p50 - base.p50) })
			fmt.Fprintf(&b, "| added p50 latency (for information) | %d | %.0f µs | — | — |\n", hi, d50h)
		}
		procC, procB := procOf(cfg, cfg.compare), procOf(cfg, cfg.baseline)
		cpuC, okC := r.paired(cfg, hi, func(c, base cell) float64 { v, _ := c.cpuPerReq(procC); return v })
		cpuB, okB := r.paired(cfg, hi, func(c, base cell) float64 { v, _ := base.cpuPerReq(procB); return v })
		if okC && okB && cpuB > 0 {
			fmt.Fprintf(&b, "| proxy CPU µs/request %s − %s (for information) | %d | %.0f µs | — | — |\n", cfg.compare, cfg.baseline, hi, cpuC-cpuB)
		}
		b.WriteString("\n")
	}

	writeRatios(&b, cfg, r)
	names := procNames(cfg)
	b.WriteString("Medians over rounds (errors: sum over rounds):\n\n| target | conns | req/s | p50 µs | p99 µs | errors / requests |")
	for _, n := range names {
		fmt.Fprintf(&b, " CPU µs/req %s |", n)
	}
	b.WriteString(" Redis cmds/req |\n|---|---:|---:|---:|---:|---:|")
	for range names {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	for _, n := range cfg.conns {
		for _, t := range cfg.targets {
			s := r.summarize(cfg, t.name, n)
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f | %d / %d |", t.name, n, s.rps, s.p50, s.p99, s.errors, s.requests)
			for _, pn := range names {
				fmt.Fprintf(&b, " %.1f |", s.cpu[pn])
			}
			if s.redis < 0 {
				b.WriteString(" — |\n")
			} else {
				fmt.Fprintf(&b, " %.4f |\n", s.redis)
			}
		}
	}
	b.WriteString("\nEvery round's req/s (spread = machine noise):\n\n| target | conns |")
	for round := 1; round <= cfg.rounds; round++ {
		fmt.Fprintf(&b, " r%d |", round)
	}
	b.WriteString("\n|---|---:|")
	for range cfg.rounds {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, n := range cfg.conns {
		for _, t := range cfg.targets {
			fmt.Fprintf(&b, "| %s | %d |", t.name, n)
			for round := 1; round <= cfg.rounds; round++ {
				if c, ok := r.find(t.name, n, round); ok {
					fmt.Fprintf(&b, " %.0f |", c.rps())
				} else {
					b.WriteString(" — |")
				}
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// procOf is the --proc that serves a target: the one of the same name, else,
// for a target named like gateway-jwt (a second credential on the same
// process), the one named by the part before the last "-".
func procOf(cfg config, target string) string {
	for name := target; ; {
		if hasProc(cfg, name) {
			return name
		}
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			return target
		}
		name = name[:i]
	}
}

func targetNames(cfg config) string {
	var s []string
	for _, t := range cfg.targets {
		s = append(s, t.name)
	}
	return strings.Join(s, " → ")
}

// procNames is the measured processes in flag order, then loadgen.
func procNames(cfg config) []string {
	var s []string
	for _, p := range cfg.procs {
		s = append(s, p.name)
	}
	return append(s, "loadgen")
}
