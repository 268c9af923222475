package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// cell is one measurement: one target at one connection count in one round.
type cell struct {
	target   string
	conns    int
	round    int
	requests int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
	cpu      map[string]time.Duration // process name → CPU time during the measurement
	redisCmd int64                    // Redis commands during the measurement (-1: not measured)
	firstErr string
}

func (c cell) rps() float64 { return float64(c.requests) / c.elapsed.Seconds() }

// cpuPerReq is the named process's CPU microseconds per request.
func (c cell) cpuPerReq(name string) (float64, bool) {
	d, ok := c.cpu[name]
	if !ok || c.requests == 0 {
		return 0, false
	}
	return float64(d.Microseconds()) / float64(c.requests), true
}

// results holds every cell in the order it ran.
type results struct {
	cells []cell
	start time.Time
	end   time.Time
}

// bench checks every target, then runs rounds × conns × targets cells.
func bench(ctx context.Context, cfg config, log io.Writer) (results, error) {
	res := results{start: time.Now()}
	if err := checkTargets(ctx, cfg); err != nil {
		return res, err
	}
	for round := 1; round <= cfg.rounds; round++ {
		for _, n := range cfg.conns {
			for _, t := range cfg.targets {
				c, err := measure(ctx, cfg, t, n)
				if err != nil {
					return res, err
				}
				c.round = round
				fmt.Fprintf(log, "round %d/%d %-8s conns=%-3d %8.0f req/s p50=%-9s p99=%-9s errors=%d\n",
					round, cfg.rounds, t.name, n, c.rps(), c.p50.Round(time.Microsecond), c.p99.Round(time.Microsecond), c.errors)
				if c.firstErr != "" {
					fmt.Fprintf(log, "  first error: %s\n", c.firstErr)
				}
				res.cells = append(res.cells, c)
			}
		}
	}
	res.end = time.Now()
	return res, nil
}

// measure runs conns closed-loop connections against t for the warm-up, then
// for the measured duration, and reads CPU and Redis counters around the
// measured part.
func measure(ctx context.Context, cfg config, t target, conns int) (cell, error) {
	c := cell{target: t.name, conns: conns, redisCmd: -1}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		lat       []time.Duration
		errs      int
		firstErr  string
		measuring = make(chan struct{})
		stop      = make(chan struct{})
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			d := &doer{client: newClient(), t: t}
			defer d.client.CloseIdleConnections()
			local := make([]time.Duration, 0, 1<<14)
			localErrs := 0
			localFirst := ""
			on := false
			for i := w; ; i++ {
				stopped := false
				select {
				case <-stop:
					stopped = true
				default:
				}
				if stopped {
					mu.Lock()
					lat = append(lat, local...)
					errs += localErrs
					if firstErr == "" {
						firstErr = localFirst
					}
					mu.Unlock()
					return
				}
				if !on {
					select {
					case <-measuring:
						on = true
					default:
					}
				}
				t0 := time.Now()
				_, err := d.do(cctx, cfg.mix[i%len(cfg.mix)].body, i)
				el := time.Since(t0)
				if !on {
					continue
				}
				if err != nil {
					if cctx.Err() != nil {
						continue
					}
					localErrs++
					if localFirst == "" {
						localFirst = err.Error()
					}
					continue
				}
				local = append(local, el)
			}
		}(w)
	}
	sleepCtx(ctx, cfg.warmup)
	cpu0, err := readCPU(cfg.procs)
	if err != nil {
		close(stop)
		wg.Wait()
		return c, err
	}
	r0, rerr := redisCommands(ctx, cfg.redis)
	t0 := time.Now()
	close(measuring)
	sleepCtx(ctx, cfg.duration)
	close(stop)
	// Requests in flight finish (and are not counted) before the counters are read.
	wg.Wait()
	c.elapsed = time.Since(t0)
	cpu1, err := readCPU(cfg.procs)
	if err != nil {
		return c, err
	}
	if cfg.redis != "" {
		r1, rerr1 := redisCommands(ctx, cfg.redis)
		if rerr != nil || rerr1 != nil {
			return c, fmt.Errorf("redis INFO: %w", errors.Join(rerr, rerr1))
		}
		c.redisCmd = r1 - r0
	}
	if ctx.Err() != nil {
		return c, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	c.cpu = map[string]time.Duration{}
	for name, v := range cpu1 {
		c.cpu[name] = v - cpu0[name]
	}
	c.requests = len(lat)
	c.errors = errs
	c.firstErr = firstErr
	slices.Sort(lat)
	c.p50 = percentile(lat, 0.50)
	c.p99 = percentile(lat, 0.99)
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// percentile of sorted durations (nearest rank); 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
