package delivery

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Run works until ctx is cancelled. Two loops: the fan-out (which may wait
// for a writer holding the feed lock, so it never delays deliveries) and the
// claimer, which claims as many attempts as there are free workers and polls
// again at once while there is work, when a worker frees up or new events were
// fanned out, and otherwise after Poll. Attempts in flight when ctx ends are
// finished first (each bounded by the timeout) so an answered request is
// recorded as such.
func (d *Dispatcher) Run(ctx context.Context) {
	fanned := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.fanOutLoop(ctx, fanned)
	}()

	slots := make(chan struct{}, d.cfg.Workers)
	freed := make(chan struct{}, d.cfg.Workers)
	attemptCtx := context.WithoutCancel(ctx)
	warn := warnEvery(d.cfg.Logger, time.Minute)
	for ctx.Err() == nil {
		busy := false
		if free := d.cfg.Workers - len(slots); free > 0 {
			jobs, err := d.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				warn("claiming webhook deliveries failed", err)
			}
			for _, j := range jobs {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.attempt(attemptCtx, ctx, j)
					<-slots
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
			}
			busy = err == nil && len(jobs) == free
		}
		wait := d.cfg.Poll
		if busy {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-freed:
		case <-fanned:
		case <-t.C:
		}
		t.Stop()
	}
}

// Prune deletes finished deliveries older than Retention, in batches.
func (d *Dispatcher) Prune(ctx context.Context) error {
	before := d.cfg.Clock.Now().Add(-d.cfg.Retention)
	for ctx.Err() == nil {
		n, err := d.cfg.Store.Prune(ctx, before, 1000)
		if err != nil || n < 1000 {
			return err
		}
	}
	return ctx.Err()
}

// fanOutLoop fans out every Poll, and at once when a writer NOTIFYs
// store.FeedChannel (reports lag every 5 s), signalling fanned when it
// created work.
func (d *Dispatcher) fanOutLoop(ctx context.Context, fanned chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	notified := make(chan struct{}, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		d.listen(ctx, notified)
	}()
	defer func() { <-listening }()
	var lastLag, lastPrune time.Time
	for ctx.Err() == nil {
		if d.cfg.Retention > 0 && time.Since(lastPrune) >= time.Hour {
			lastPrune = time.Now()
			if err := d.Prune(ctx); err != nil && ctx.Err() == nil {
				warn("pruning finished webhook deliveries failed", err)
			}
		}
		n, err := d.FanOut(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			warn("webhook fan-out failed (has `civicgate webhooks migrate` run?)", err)
		case n > 0:
			select {
			case fanned <- struct{}{}:
			default:
			}
		}
		if time.Since(lastLag) >= 5*time.Second {
			lastLag = time.Now()
			if ev, oldest, err := d.cfg.Store.Lag(ctx, d.cfg.Clock.Now()); err == nil {
				d.cfg.Metrics.Lag(ev, oldest)
			}
		}
		t := time.NewTimer(d.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-notified:
		}
		t.Stop()
	}
}

// listen keeps a LISTEN on store.FeedChannel open until ctx ends, signalling
// notified (coalesced) for each notification. A lost connection is listened
// again after a backoff of 1 s doubling to 30 s; polling goes on meanwhile.
func (d *Dispatcher) listen(ctx context.Context, notified chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	signal := func() {
		select {
		case notified <- struct{}{}:
		default:
		}
	}
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		// Once listening (again), look at once: events may have come in the gap.
		err := d.cfg.Store.Listen(ctx, signal, signal)
		if ctx.Err() != nil {
			return
		}
		warn("listening for change events failed; polling meanwhile", err)
		if time.Since(start) > time.Minute {
			wait = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, 30*time.Second)
	}
}

// warnEvery returns a logger of warnings that logs at most once per period: a
// database that is down or not migrated fails every poll.
func warnEvery(l *zap.Logger, period time.Duration) func(string, error) {
	var last time.Time
	return func(msg string, err error) {
		if time.Since(last) >= period {
			last = time.Now()
			l.Warn(msg, zap.Error(err))
		}
	}
}
