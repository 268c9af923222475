package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// mainGoal is the throughput goal of the compare/baseline pair
// (docs/performance.md: the gateway ≥ 0.90 × bare Caddy).
const mainGoal = 0.90

// summaryHeader heads the --summary file: one row per goal ratio of a run.
const summaryHeader = "| run | rounds | ratio | throughput, max conns | goal | verdict | throughput, min conns | added p50, min conns | added p99, min conns | p99 ratio, max conns | proxy CPU µs/req over base, max conns | candidate errors |\n" +
	"|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|\n"

// writeCredentials says which targets sent which bearer (never the value).
func writeCredentials(b *strings.Builder, cfg config) {
	var parts []string
	for _, t := range cfg.targets {
		switch {
		case t.bearers == nil:
		case t.bearers.once:
			parts = append(parts, fmt.Sprintf("`%s` a token never sent before on every request (first-seen: %d of a file's %d tokens sent, the pre-check's included)",
				t.name, t.bearers.used(), len(t.bearers.values)))
		case len(t.bearers.values) == 1:
			parts = append(parts, fmt.Sprintf("`%s` one bearer value on every request", t.name))
		default:
			parts = append(parts, fmt.Sprintf("`%s` %d distinct bearer values, one per request in turn (each seen before after the first pass)", t.name, len(t.bearers.values)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "Credentials: %s.\n\n", strings.Join(parts, "; "))
	}
}

// summaryRows is one row per goal ratio: the compare/baseline pair, then
// every --ratio with a goal.
func summaryRows(cfg config, r results) string {
	lo, hi := slices.Min(cfg.conns), slices.Max(cfg.conns)
	names := map[string]bool{}
	for _, t := range cfg.targets {
		names[t.name] = true
	}
	pairs := []ratio{}
	if names[cfg.compare] && names[cfg.baseline] {
		pairs = append(pairs, ratio{cand: cfg.compare, base: cfg.baseline, goal: mainGoal})
	}
	for _, rt := range cfg.ratios {
		if rt.goal > 0 {
			pairs = append(pairs, rt)
		}
	}
	var b strings.Builder
	for _, p := range pairs {
		thr := func(c, base cell) float64 { return c.rps() / base.rps() }
		hiThr := r.pairedOf(cfg.rounds, p.cand, p.base, hi, thr)
		loThr := r.pairedOf(cfg.rounds, p.cand, p.base, lo, thr)
		d50 := r.pairedOf(cfg.rounds, p.cand, p.base, lo, func(c, base cell) float64 { return us(c.p50 - base.p50) })
		d99 := r.pairedOf(cfg.rounds, p.cand, p.base, lo, func(c, base cell) float64 { return us(c.p99 - base.p99) })
		p99 := r.pairedOf(cfg.rounds, p.cand, p.base, hi, func(c, base cell) float64 { return float64(c.p99) / float64(base.p99) })
		procC, procB := procOf(cfg, p.cand), procOf(cfg, p.base)
		cpu := "—"
		if hasProc(cfg, procC) && hasProc(cfg, procB) {
			d := r.pairedOf(cfg.rounds, p.cand, p.base, hi, func(c, base cell) float64 {
				vc, _ := c.cpuPerReq(procC)
				vb, _ := base.cpuPerReq(procB)
				return vc - vb
			})
			cpu = fmt.Sprintf("%+.0f", d)
		}
		errs := 0
		for _, n := range cfg.conns {
			errs += r.summarize(cfg, p.cand, n).errors
		}
		fmt.Fprintf(&b, "| %s | %d | %s ÷ %s | %.3f (%d) | ≥ %g | %s | %.3f (%d) | %+.0f µs | %+.0f µs | %.3f | %s | %d |\n",
			cfg.label, cfg.rounds, p.cand, p.base, hiThr, hi, p.goal, verdict(hiThr >= p.goal), loThr, lo, d50, d99, p99, cpu, errs)
	}
	return b.String()
}

func hasProc(cfg config, name string) bool {
	for _, p := range cfg.procs {
		if p.name == name {
			return true
		}
	}
	return false
}

// appendSummary appends the run's rows to cfg.summary, heading a new file.
func appendSummary(cfg config, r results) error {
	if cfg.summary == "" {
		return nil
	}
	f, err := os.OpenFile(cfg.summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() == 0 {
		_, err = f.WriteString(summaryHeader)
	}
	if err == nil {
		_, err = f.WriteString(summaryRows(cfg, r))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("summary %s: %w", cfg.summary, err)
	}
	return nil
}
