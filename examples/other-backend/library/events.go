package library

import (
	"context"
	"sync"
)

// eventBuffer is how many events a slow subscriber may fall behind before it
// is dropped (its stream ends) rather than slowing every mutation down.
const eventBuffer = 64

// LoanEvents fans loan events out to the subscribers present when they are
// published; it is safe for concurrent use.
type LoanEvents struct {
	mu   sync.Mutex
	subs map[chan *LoanEvent]struct{}
}

// NewLoanEvents returns a fan-out with no subscribers.
func NewLoanEvents() *LoanEvents {
	return &LoanEvents{subs: map[chan *LoanEvent]struct{}{}}
}

// Subscribe returns a channel of every event published from now until ctx
// ends (or the subscriber falls eventBuffer events behind); the channel is
// closed then.
func (e *LoanEvents) Subscribe(ctx context.Context) <-chan *LoanEvent {
	ch := make(chan *LoanEvent, eventBuffer)
	e.mu.Lock()
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	go func() {
		<-ctx.Done()
		e.drop(ch)
	}()
	return ch
}

// Subscribers is how many subscriptions are open.
func (e *LoanEvents) Subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

// Publish hands the event to every subscriber.
func (e *LoanEvents) Publish(ev *LoanEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default: // too far behind: end its stream
			delete(e.subs, ch)
			close(ch)
		}
	}
}

func (e *LoanEvents) drop(ch chan *LoanEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.subs[ch]; ok {
		delete(e.subs, ch)
		close(ch)
	}
}
