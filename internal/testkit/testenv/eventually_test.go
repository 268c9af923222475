package testenv

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, time.Minute, "the third call", func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3 (it must stop at the first nil)", calls)
	}
}

func TestEventuallyFailsAfterTheDeadline(t *testing.T) {
	var inner fakeTB
	done := make(chan struct{})
	go func() {
		defer close(done)
		EventuallyTrue(&inner, 20*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if !inner.failed {
		t.Fatal("a condition that never holds must fail the test")
	}
}

// fakeTB records Fatalf and ends its goroutine the way testing.T does.
type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}
