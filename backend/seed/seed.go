// Package seed generates deterministic, realistic demo and scale data for recordsd's five record families
// and loads it with PostgreSQL COPY. The same seed always yields the same rows (see README.md).
package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/civicgate/civicgate/backend/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Scale sizes the generated data.
type Scale struct {
	Name        string
	Bills       int // total bills over Congresses 93–119
	Members     int // target members (0 = the simulated roster only)
	Regulatory  int
	BudgetLines int // per dataset (APPROPRIATIONS and OUTLAYS each)
	Lobbying    int
}

// Scales are the named sizes accepted by `recordsd seed --scale`.
var Scales = map[string]Scale{
	"small":  {Name: "small", Bills: 2_000, Regulatory: 1_000, BudgetLines: 1_000, Lobbying: 1_000},
	"medium": {Name: "medium", Bills: 100_000, Members: 20_000, Regulatory: 20_000, BudgetLines: 20_000, Lobbying: 20_000},
	"1m":     {Name: "1m", Bills: 1_000_000, Members: 200_000, Regulatory: 200_000, BudgetLines: 200_000, Lobbying: 200_000},
}

// DefaultSyncTime is the last_synced_at reference of generated rows (fixed so runs are reproducible).
var DefaultSyncTime = time.Date(2026, time.November, 20, 6, 0, 0, 0, time.UTC)

// Options configure Run.
type Options struct {
	Scale Scale
	Seed  uint64
	// Reset truncates every record table first; otherwise families that already have rows are skipped.
	Reset bool
	// Now bounds generated dates and anchors last_synced_at; zero means DefaultSyncTime.
	Now time.Time
	// Workers is the number of concurrent COPY streams (default 3).
	Workers int
	// Families limits the load to these families (FamilyBills, …); empty means all five.
	Families []string
	Logger   *slog.Logger
}

// Family names, also the keys of Result.
const (
	FamilyMembers    = "members"
	FamilyBills      = "bills"
	FamilyRegulatory = "regulatory_filings"
	FamilyBudgets    = "federal_budget_lines"
	FamilyLobbying   = "lobbying_disclosures"
)

// Result reports rows loaded per table and families skipped because they already had rows.
type Result struct {
	Rows    map[string]int64
	Skipped []string
	Elapsed time.Duration
}

type task struct {
	family string
	table  string
	cols   []string
	gen    func(emit func([]any) error) error
}

// Run applies migrations, generates the data and loads it.
func Run(ctx context.Context, pool *pgxpool.Pool, o Options) (Result, error) {
	start := time.Now()
	if o.Now.IsZero() {
		o.Now = DefaultSyncTime
	}
	if o.Workers <= 0 {
		o.Workers = 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Scale.Name == "" {
		return Result{}, errors.New("seed: no scale")
	}
	if err := migrations.Apply(ctx, pool); err != nil {
		return Result{}, fmt.Errorf("seed: migrate: %w", err)
	}
	tables := map[string]string{FamilyMembers: "members", FamilyBills: "bills", FamilyRegulatory: "regulatory_filings",
		FamilyBudgets: "federal_budget_lines", FamilyLobbying: "lobbying_disclosures"}
	res := Result{Rows: map[string]int64{}}
	want := map[string]bool{}
	families := o.Families
	if len(families) == 0 {
		families = []string{FamilyMembers, FamilyBills, FamilyRegulatory, FamilyBudgets, FamilyLobbying}
	}
	for _, fam := range families {
		if _, ok := tables[fam]; !ok {
			return Result{}, fmt.Errorf("seed: unknown family %q", fam)
		}
	}
	if o.Reset {
		truncate := "TRUNCATE " + tables[families[0]]
		for _, fam := range families[1:] {
			truncate += ", " + tables[fam]
		}
		if slices.Contains(families, FamilyMembers) {
			truncate += ", member_terms"
		}
		if _, err := pool.Exec(ctx, truncate); err != nil {
			return Result{}, fmt.Errorf("seed: reset: %w", err)
		}
	}
	for _, fam := range families {
		var has bool
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+tables[fam]+")").Scan(&has); err != nil {
			return Result{}, fmt.Errorf("seed: inspect %s: %w", fam, err)
		}
		if has {
			res.Skipped = append(res.Skipped, fam)
			o.Logger.Info("seed: family already has rows, skipped (use --reset to reload)", "family", fam)
			continue
		}
		want[fam] = true
	}
	tasks := plan(o, want)
	if err := runTasks(ctx, pool, o, tasks, res.Rows); err != nil {
		return res, err
	}
	for fam := range want {
		// VACUUM flushes GIN pending lists (see copyOn) and sets the visibility map; ANALYZE for the planner.
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+tables[fam]); err != nil {
			return res, fmt.Errorf("seed: analyze %s: %w", fam, err)
		}
	}
	if want[FamilyMembers] {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) member_terms"); err != nil {
			return res, fmt.Errorf("seed: analyze member_terms: %w", err)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// plan splits the wanted families into independent, deterministic load tasks (largest first).
func plan(o Options, want map[string]bool) []task {
	sc, seed, now := o.Scale, o.Seed, o.Now
	var tasks []task
	ro := buildRoster(seed, 0)
	if extra := sc.Members - len(ro.members); extra > 0 {
		ro = buildRoster(seed, extra) // same simulation (same stream), then synthetic historical members
	}
	if want[FamilyBills] {
		nc := lastCongress - firstCongress + 1
		for c := lastCongress; c >= firstCongress; c-- {
			n := sc.Bills / nc
			if c == lastCongress {
				n += sc.Bills % nc
			}
			tasks = append(tasks, task{FamilyBills, "bills", billColumns, func(emit func([]any) error) error {
				return billsOfCongress(seed, c, n, ro, now, emit)
			}})
		}
	}
	if want[FamilyMembers] {
		tasks = append(tasks, task{FamilyMembers, "members", memberColumns, func(emit func([]any) error) error {
			r := newRNG(seed, 7)
			for _, m := range ro.members {
				if err := emit([]any{m.id, m.id, m.name(), m.state, now.Add(-time.Duration(r.IntN(86400)) * time.Second)}); err != nil {
					return err
				}
			}
			return nil
		}}, task{FamilyMembers, "member_terms", termColumns, func(emit func([]any) error) error {
			for _, m := range ro.members {
				for _, t := range m.terms {
					var d any
					if t.district != nil {
						d = *t.district
					}
					if err := emit([]any{m.id, t.congress, t.chamber, t.party, t.state, d}); err != nil {
						return err
					}
				}
			}
			return nil
		}})
	}
	if want[FamilyBudgets] {
		accts := accounts(seed, max(sc.BudgetLines/(lastBudgetFY-firstBudgetFY+1)+1, sc.BudgetLines/100+1, 40))
		tasks = append(tasks,
			task{FamilyBudgets, "federal_budget_lines", budgetColumns, func(emit func([]any) error) error {
				return appropriations(seed, accts, sc.BudgetLines, now, emit)
			}},
			task{FamilyBudgets, "federal_budget_lines", budgetColumns, func(emit func([]any) error) error {
				return outlays(seed, accts, sc.BudgetLines, now, emit)
			}})
	}
	if want[FamilyRegulatory] {
		ny := lastRegYear - firstRegYear + 1
		for y := lastRegYear; y >= firstRegYear; y-- {
			n := sc.Regulatory / ny
			if y == lastRegYear {
				n += sc.Regulatory % ny
			}
			tasks = append(tasks, task{FamilyRegulatory, "regulatory_filings", regulatoryColumns, func(emit func([]any) error) error {
				return regulatoryOfYear(seed, y, n, now, emit)
			}})
		}
	}
	if want[FamilyLobbying] {
		regs := lobbyingParties(seed, sc.Lobbying)
		ny := lastLobbyYear - firstLobbyYear + 1
		for y := lastLobbyYear; y >= firstLobbyYear; y-- {
			n := sc.Lobbying / ny
			if y == lastLobbyYear {
				n += sc.Lobbying % ny
			}
			tasks = append(tasks, task{FamilyLobbying, "lobbying_disclosures", lobbyingColumns, func(emit func([]any) error) error {
				return lobbyingOfYear(seed, y, n, regs, now, emit)
			}})
		}
	}
	return tasks
}

// runTasks runs the tasks on o.Workers connections. member_terms must follow members (foreign key), so
// the two members tasks run in order on one worker.
func runTasks(ctx context.Context, pool *pgxpool.Pool, o Options, tasks []task, rows map[string]int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var members, rest []task
	for _, t := range tasks {
		if t.family == FamilyMembers {
			members = append(members, t)
		} else {
			rest = append(rest, t)
		}
	}
	queue := make(chan []task, len(tasks))
	if len(members) > 0 {
		queue <- members // first: its two COPYs are sequential
	}
	for _, t := range rest {
		queue <- []task{t}
	}
	close(queue)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		pending  = map[string]int{}
		start    = time.Now()
	)
	for _, t := range tasks {
		pending[t.family]++
	}
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for group := range queue {
				for _, t := range group {
					n, err := copyTask(ctx, pool, t)
					mu.Lock()
					rows[t.table] += n
					if pending[t.family]--; pending[t.family] == 0 && err == nil {
						o.Logger.Info("seed: family loaded", "family", t.family, "after", time.Since(start).Round(time.Millisecond).String())
					}
					if err != nil && firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// copyTask streams one task's rows into its table with COPY FROM STDIN (binary), generating rows on a
// separate goroutine so generation overlaps with the server's work.
func copyTask(ctx context.Context, pool *pgxpool.Pool, t task) (int64, error) {
	ch := make(chan []any, 4096)
	genErr := make(chan error, 1)
	genCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer close(ch)
		genErr <- t.gen(func(row []any) error {
			select {
			case ch <- row:
				return nil
			case <-genCtx.Done():
				return genCtx.Err()
			}
		})
	}()
	src := pgx.CopyFromFunc(func() ([]any, error) {
		row, ok := <-ch
		if !ok {
			return nil, nil
		}
		return row, nil
	})
	n, err := copyOn(ctx, pool, t, src)
	stop()
	for range ch { // drain so the generator can finish
	}
	if gerr := <-genErr; gerr != nil && err == nil {
		err = gerr
	}
	if err != nil {
		return n, fmt.Errorf("seed: copy %s: %w", t.table, err)
	}
	return n, nil
}

// copyOn runs one COPY on its own connection with load-friendly session settings: a larger GIN pending
// list (GIN entries are batched into the index instead of inserted one by one) and asynchronous commit.
// Both are reset before the connection returns to the pool.
func copyOn(ctx context.Context, pool *pgxpool.Pool, t task, src pgx.CopyFromSource) (int64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("seed: acquire: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET gin_pending_list_limit = '64MB'; SET synchronous_commit = off"); err != nil {
		return 0, fmt.Errorf("seed: session settings: %w", err)
	}
	n, err := conn.Conn().CopyFrom(ctx, pgx.Identifier{t.table}, t.cols, src)
	if _, rerr := conn.Exec(context.WithoutCancel(ctx), "RESET gin_pending_list_limit; RESET synchronous_commit"); rerr != nil && err == nil {
		err = rerr
	}
	return n, err
}
