package testbrowser

// What the page reports on its console (console.* calls, uncaught
// exceptions, browser log entries such as CSP violations), collected per tab.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
)

// Entry is one thing the page reported on its console.
type Entry struct {
	// Source is "console" for console.* calls, "exception" for uncaught
	// exceptions, "chromedp" for errors of the DevTools connection, and the
	// browser log's source otherwise ("security" for Content-Security-Policy
	// violations, "network", "javascript", "violation", …).
	Source string
	// Level is "error", "warning", "info", "debug" or "verbose" (console.log
	// is "info"; console.* types map to these levels).
	Level string
	Text  string
	URL   string // the page or script it came from, when known
}

func (e Entry) String() string {
	s := e.Source + " " + e.Level + ": " + e.Text
	if e.URL != "" {
		s += " (" + e.URL + ")"
	}
	return s
}

// Console returns every entry the tab has reported so far, oldest first.
func Console(ctx context.Context) []Entry {
	return recorderOf(ctx).all()
}

// ConsoleErrors returns the error-level entries reported so far: failed
// console.error calls, uncaught exceptions, CSP violations, failed loads.
func ConsoleErrors(ctx context.Context) []Entry {
	var errs []Entry
	for _, e := range Console(ctx) {
		if e.Level == "error" {
			errs = append(errs, e)
		}
	}
	return errs
}

// WaitConsole waits until the tab has reported an entry for which match is
// true (one reported earlier counts) and returns it; it fails the test after
// Timeout, listing what was reported.
func WaitConsole(t testing.TB, ctx context.Context, match func(Entry) bool) Entry {
	t.Helper()
	rec := recorderOf(ctx)
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	seen := 0
	for {
		entries, changed := rec.since(seen)
		for _, e := range entries {
			if match(e) {
				return e
			}
		}
		seen += len(entries)
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("testbrowser: no matching console entry within %v; reported:\n%s", Timeout, joinEntries(rec.all()))
			return Entry{}
		}
	}
}

func joinEntries(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("  " + e.String() + "\n")
	}
	if b.Len() == 0 {
		return "  (nothing)\n"
	}
	return b.String()
}

// recorderKey is the context key of a tab's recorder.
type recorderKey struct{}

func recorderOf(ctx context.Context) *recorder {
	rec, ok := ctx.Value(recorderKey{}).(*recorder)
	if !ok {
		panic("testbrowser: context does not come from testbrowser.New")
	}
	return rec
}

// recorder collects a tab's console entries.
type recorder struct {
	mu      sync.Mutex
	entries []Entry
	changed chan struct{} // closed and replaced when an entry is added
}

func (r *recorder) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) all() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...)
}

// since returns the entries after the first n and a channel closed when more
// arrive.
func (r *recorder) since(n int) ([]Entry, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries[n:]...), r.changed
}

// listen turns DevTools events into entries; it runs on chromedp's event
// goroutine and must not block.
func (r *recorder) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range ev.Args {
			parts = append(parts, remoteObjectText(a))
		}
		e := Entry{Source: "console", Level: consoleLevel(ev.Type), Text: strings.Join(parts, " ")}
		if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
			e.URL = ev.StackTrace.CallFrames[0].URL
		}
		r.add(e)
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		if d == nil {
			return
		}
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		r.add(Entry{Source: "exception", Level: "error", Text: text, URL: d.URL})
	case *log.EventEntryAdded:
		if ev.Entry == nil {
			return
		}
		r.add(Entry{Source: string(ev.Entry.Source), Level: string(ev.Entry.Level), Text: ev.Entry.Text, URL: ev.Entry.URL})
	}
}

// consoleLevel maps a console.* call's type to a log level.
func consoleLevel(t runtime.APIType) string {
	switch t {
	case runtime.APITypeError, runtime.APITypeAssert:
		return "error"
	case runtime.APITypeWarning:
		return "warning"
	case runtime.APITypeDebug:
		return "debug"
	default:
		return "info"
	}
}

// remoteObjectText renders one console argument: strings as they are, other
// values as their JSON or description.
func remoteObjectText(o *runtime.RemoteObject) string {
	switch {
	case o == nil:
		return ""
	case o.Type == runtime.TypeString:
		var s string
		if err := json.Unmarshal(o.Value, &s); err == nil {
			return s
		}
	case len(o.Value) > 0:
		return string(o.Value)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.Type)
}
