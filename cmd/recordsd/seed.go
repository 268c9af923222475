package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/civicgate/civicgate/backend/seed"
)

// runSeed: recordsd seed --scale small|medium|1m [--seed N] [--reset] [--workers N] [--families a,b] (env DATABASE_URL).
// Families that already have rows are skipped unless --reset truncates every record table first.
func runSeed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	scale := fs.String("scale", "small", "data size: small | medium | 1m")
	seedN := fs.Uint64("seed", 1, "generator seed (same seed → same rows)")
	reset := fs.Bool("reset", false, "truncate every record table first (default: skip families that already have rows)")
	workers := fs.Int("workers", 3, "concurrent COPY streams")
	only := fs.String("families", "", "comma-separated subset: members,bills,regulatory_filings,federal_budget_lines,lobbying_disclosures (default all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, ok := seed.Scales[*scale]
	if !ok {
		names := make([]string, 0, len(seed.Scales))
		for n := range seed.Scales {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown --scale %q (want %s)", *scale, strings.Join(names, ", "))
	}
	pool, err := openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var families []string
	if *only != "" {
		families = strings.Split(*only, ",")
	}
	res, err := seed.Run(ctx, pool, seed.Options{Scale: sc, Seed: *seedN, Reset: *reset, Workers: *workers, Families: families, Logger: slog.Default()})
	if err != nil {
		return err
	}
	slog.Info("seed done", "scale", sc.Name, "seed", *seedN, "rows", res.Rows, "skipped", res.Skipped, "elapsed", res.Elapsed.String())
	return nil
}
