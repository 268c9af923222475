package main

// One cell: one target, one shape, one round — open the sockets, warm up,
// measure memory, publish the events, measure delivery, close.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// result is one cell.
type result struct {
	target         string
	shape          shape
	err            string        // the cell failed; what is below is partial
	note           string        // something to read the numbers with
	openTime       time.Duration // first dial → a warm-up event reached every subscription
	warmups        int
	engineSubs     int // subscriptions the engine held for this cell's clients
	got, want      int64
	bad            int64
	incomplete     int           // events that did not reach every subscription
	p50, p99, max  time.Duration // over every receipt of every event
	last50, last99 time.Duration // over events: the last subscription's receipt
	lastMax        time.Duration
	rssBefore      int64 // bytes
	rssAfter       int64
	heapBefore     int64 // heap_inuse+stack_inuse after a forced GC
	heapAfter      int64
	gorBefore      int64
	gorAfter       int64
	cpu            time.Duration // proxy CPU during publication and delivery
	engineCPU      time.Duration // engine CPU in the same span
}

// awaitCount polls n until it reaches want; false if it stopped moving for
// stall (or ctx ended) first.
func awaitCount(ctx context.Context, n func() int64, want int64, stall time.Duration) bool {
	last, moved := n(), time.Now()
	for last < want {
		if ctx.Err() != nil || time.Since(moved) > stall {
			return false
		}
		time.Sleep(2 * time.Millisecond)
		if v := n(); v != last {
			last, moved = v, time.Now()
		}
	}
	return true
}

func (e *engineProc) count() int64 {
	n, err := e.subscribers()
	if err != nil {
		return -1
	}
	return int64(n)
}

// warmUp publishes warm-up events until one reached every subscription: only
// then is a proxy that subscribes upstream on its own schedule (or shares one
// upstream subscription among many clients) ready, which the engine's count
// of subscriptions cannot tell.
func warmUp(ctx context.Context, b *bench, eng *engineProc) (int, error) {
	for w := range maxWarmups {
		if _, err := eng.publish("warm-" + strconv.Itoa(w)); err != nil {
			return w, fmt.Errorf("publish: %w", err)
		}
		if awaitCount(ctx, b.warmGot[w].Load, int64(b.total), 3*time.Second) {
			return w + 1, nil
		}
	}
	return maxWarmups, fmt.Errorf("after %d warm-up events the last reached %d of %d subscriptions",
		maxWarmups, b.warmGot[maxWarmups-1].Load(), b.total)
}

func pct(sorted []int64, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return time.Duration(sorted[min(len(sorted)-1, len(sorted)*q/100)])
}

func cell(ctx context.Context, cfg config, t target, sh shape, eng *engineProc) result {
	res := result{target: t.name, shape: sh}
	if err := measure(ctx, cfg, t, sh, eng, &res); err != nil {
		res.err = err.Error()
	}
	return res
}

func measure(ctx context.Context, cfg config, t target, sh shape, eng *engineProc, res *result) error {
	total := sh.sockets * sh.subs
	events := cfg.events
	if sh.events > 0 {
		events = sh.events
	}
	b := newBench(sh, events)
	base, err := eng.subscribers()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if base != 0 {
		res.note = fmt.Sprintf("engine held %d subscriptions before the cell", base)
	}
	if res.rssBefore, res.heapBefore, res.gorBefore, err = memory(t); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	socks := make([]*socket, sh.sockets)
	closeAll := func() {
		for i, s := range socks {
			if s != nil {
				_ = s.c.CloseNow()
				socks[i] = nil
			}
		}
		// The next cell starts from an engine without this cell's subscriptions.
		if !awaitCount(ctx, func() int64 { return -eng.count() }, -int64(base), 30*time.Second) {
			res.note = fmt.Sprintf("engine still held %d subscriptions 30 s after the sockets closed", eng.count())
		}
	}
	defer closeAll()

	start := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	sem := make(chan struct{}, 64) // dial at most 64 at a time
	for i := range socks {
		if firstErr.Load() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := open(cctx, t, cfg.bearer, i, b)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			socks[i] = s
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		opened := 0
		for _, s := range socks {
			if s != nil {
				opened++
			}
		}
		return fmt.Errorf("after %d of %d sockets: %w", opened, sh.sockets, *e)
	}
	// A proxy that tunnels each socket makes the engine's count reach total;
	// one that multiplexes stops short: then the warm-up decides.
	awaitCount(ctx, eng.count, int64(base+total), time.Second)
	if res.warmups, err = warmUp(ctx, b, eng); err != nil {
		return err
	}
	res.openTime = time.Since(start)
	n, err := eng.subscribers()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	res.engineSubs = n - base
	time.Sleep(cfg.settle)
	if res.rssAfter, res.heapAfter, res.gorAfter, err = memory(t); err != nil {
		return err
	}

	published := make([]int64, events)
	cpu0, _ := procCPU(t.pid)
	ecpu0, _ := procCPU(eng.pid())
	for seq := range events {
		if published[seq], err = eng.publish("ev-" + strconv.Itoa(seq)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		// The next event goes out once this one reached every subscription
		// (or deliveries stalled for 10 s), so latencies are one fan-out
		// each, not a backlog.
		awaitCount(ctx, b.got[seq].Load, int64(total), 10*time.Second)
		time.Sleep(cfg.interval)
	}
	cpu1, _ := procCPU(t.pid)
	ecpu1, _ := procCPU(eng.pid())
	res.cpu, res.engineCPU = cpu1-cpu0, ecpu1-ecpu0
	res.want = int64(total * events)
	res.got = b.n.Load()
	res.bad = b.bad.Load()

	all := make([]int64, 0, res.got)
	var lasts []int64
	for seq := range events {
		var last int64
		for k := range total {
			if r := b.recv[seq*total+k].Load(); r != 0 {
				all = append(all, r-published[seq])
				last = max(last, r-published[seq])
			}
		}
		if b.got[seq].Load() == int64(total) {
			lasts = append(lasts, last)
		} else {
			res.incomplete++
		}
	}
	slices.Sort(all)
	slices.Sort(lasts)
	res.p50, res.p99 = pct(all, 50), pct(all, 99)
	res.last50, res.last99 = pct(lasts, 50), pct(lasts, 99)
	if len(all) > 0 {
		res.max = time.Duration(all[len(all)-1])
	}
	if len(lasts) > 0 {
		res.lastMax = time.Duration(lasts[len(lasts)-1])
	}
	return nil
}
