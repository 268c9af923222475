package outbox

import (
	"cmp"
	"context"
	"net/mail"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Worker sends the outbox's due mails until stopped: it looks every
// Interval, and at once when Wake is called (a mail was just enqueued).
type Worker struct {
	Pool     *pgxpool.Pool
	Sender   Sender
	From     *mail.Address
	Interval time.Duration // default 2s
	Logger   *zap.Logger

	wake   chan struct{}
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Start starts the worker's goroutine.
func (w *Worker) Start() {
	w.wake = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done.Add(1)
	go w.run(ctx)
}

// Stop stops the worker and waits for the mail in hand: it is sent and
// recorded, or its transaction rolls back and another worker sends it.
func (w *Worker) Stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.done.Wait()
}

// Wake makes the worker look now; it never blocks.
func (w *Worker) Wake() {
	if w.wake == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Worker) run(ctx context.Context) {
	defer w.done.Done()
	interval := cmp.Or(max(w.Interval, 0), 2*time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		w.drain(ctx)
		if time.Since(lastPrune) > time.Hour {
			if err := Prune(ctx, w.Pool, 1000); err != nil && ctx.Err() == nil {
				w.Logger.Warn("outbox: old mails not pruned", zap.Error(err))
			}
			lastPrune = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// drain sends due mails until none is due or a send fails (the server is
// likely down: the next tick tries again, the failed mail after its backoff).
func (w *Worker) drain(ctx context.Context) {
	for ctx.Err() == nil {
		// A mail in hand is finished even when Stop is called: cancelling
		// between the server accepting it and the commit would send it twice.
		due, err := SendOne(context.WithoutCancel(ctx), w.Pool, func(ctx context.Context, m Message) error {
			msg, err := Build(m, w.From, time.Now())
			if err != nil {
				return err
			}
			return w.Sender.Send(ctx, m.To, msg)
		})
		if err != nil {
			if ctx.Err() == nil {
				w.Logger.Warn("outbox: mail not sent; it is retried", zap.Error(err))
			}
			return
		}
		if !due {
			return
		}
	}
}
