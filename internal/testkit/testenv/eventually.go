package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond until it returns nil, and fails t with what and cond's
// last error if within passes first. It is the one way tests here wait for a
// condition: a fixed sleep either wastes time on a quiet machine or fails on a
// loaded one, so a test awaits the state it needs, with a deadline generous
// enough for a loaded 2-core machine (the deadline bounds a failure, it is not
// an expectation of speed). The poll interval starts at 5 ms and doubles to
// 100 ms, so a condition that holds soon is seen soon.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := 5 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %v", within, what, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// EventuallyTrue is Eventually for a condition with no error to report.
func EventuallyTrue(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

type notYet struct{}

func (notYet) Error() string { return "condition not met yet" }

var errNotYet error = notYet{}
