package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Run works until ctx is cancelled. Three loops and a listener: the fan-out
// (which may wait for a writer holding the feed lock, so it never delays
// deliveries), the reconciler (parks, resumes and cancels as the key store
// changes) and the claimer, which claims as many attempts as there are free
// workers and polls again at once while there is work, when a worker frees
// up, new events were fanned out or deliveries were resumed, and otherwise
// after Poll. Attempts in flight when ctx ends are finished first (each
// bounded by the timeout) so an answered request is recorded as such.
func (d *Dispatcher) Run(ctx context.Context) {
	work := make(chan struct{}, 1)
	feed := make(chan struct{}, 1)
	auth := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, loop := range []func(){
		func() { d.listen(ctx, feed, auth) },
		func() { d.fanOutLoop(ctx, feed, work) },
		func() { d.reconcileLoop(ctx, auth, work) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop()
		}()
	}

	slots := make(chan struct{}, d.cfg.Workers)
	freed := make(chan struct{}, d.cfg.Workers)
	attemptCtx := context.WithoutCancel(ctx)
	warn := warnEvery(d.cfg.Logger, time.Minute)
	wrongKey := every(time.Minute, func(err error) {
		d.cfg.Logger.Error("not delivering webhooks: "+store.WrongKeyHint, zap.Error(err))
	})
	for ctx.Err() == nil {
		busy := false
		if free := d.cfg.Workers - len(slots); free > 0 {
			jobs, err := d.claim(ctx, free)
			switch {
			case err == nil || ctx.Err() != nil:
			case errors.Is(err, store.ErrWrongKey):
				wrongKey(err)
			default:
				warn("claiming webhook deliveries failed", err)
			}
			for _, j := range jobs {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.attempt(attemptCtx, ctx, j)
					<-slots
					signal(freed)
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
		case <-work:
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

// signal sends on a coalescing channel (capacity 1) without blocking.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// fanOutLoop fans out every Poll, and at once when a writer NOTIFYs
// contract.ChangeEventsChannel (reports lag every 5 s), signalling work when it created
// some.
func (d *Dispatcher) fanOutLoop(ctx context.Context, feed <-chan struct{}, work chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
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
			warn("webhook fan-out failed (have `civicgate webhooks migrate` and `civicgate keys migrate` run on this database?)", err)
		case n > 0:
			signal(work)
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
		case <-feed:
		}
		t.Stop()
	}
}

// reconcileLoop reconciles the outbox with the key store every Poll, and at
// once when the key store NOTIFYs store.AuthChannel (a suspension, a
// resumption, a key issued, rotated or revoked), signalling work when
// deliveries were resumed. It runs apart from the fan-out, which may wait for
// a writer holding the feed lock.
func (d *Dispatcher) reconcileLoop(ctx context.Context, auth <-chan struct{}, work chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	for ctx.Err() == nil {
		r, err := d.Reconcile(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			warn("reconciling webhook deliveries with the key store failed", err)
		case r.Resumed > 0:
			signal(work)
		}
		t := time.NewTimer(d.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-auth:
		}
		t.Stop()
	}
}

// listen keeps a LISTEN on contract.ChangeEventsChannel and store.AuthChannel open until
// ctx ends, signalling feed or auth (coalesced) for each notification. A lost
// connection is listened again after a backoff of 1 s doubling to 30 s;
// polling goes on meanwhile.
func (d *Dispatcher) listen(ctx context.Context, feed, auth chan<- struct{}) {
	warn := warnEvery(d.cfg.Logger, time.Minute)
	// Once listening (again), look at once: changes may have come in the gap.
	ready := func() { signal(feed); signal(auth) }
	notified := func(channel string) {
		if channel == store.AuthChannel {
			signal(auth)
		} else {
			signal(feed)
		}
	}
	wait := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := d.cfg.Store.Listen(ctx, ready, notified)
		if ctx.Err() != nil {
			return
		}
		warn("listening for change events and key changes failed; polling meanwhile", err)
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

// every returns f limited to one call per period.
func every(period time.Duration, f func(error)) func(error) {
	var last time.Time
	return func(err error) {
		if time.Since(last) >= period {
			last = time.Now()
			f(err)
		}
	}
}
