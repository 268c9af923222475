package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/backend/migrations/migratedtest"
	"github.com/civicgate/civicgate/backend/mirror"
	"github.com/civicgate/civicgate/backend/mirror/command"
	"github.com/civicgate/civicgate/backend/mirror/fetch"
	"github.com/civicgate/civicgate/internal/testkit/testenv"
)

func TestParse(t *testing.T) {
	bad := [][]string{
		{}, {"bills"}, {"bills", "--file", "a", "--url", "b"}, {"federal_budgets", "--file", "a"},
		{"bills", "--file", "a", "--source", "outlays"}, {"bills", "--file", "a", "--on-error", "ignore"}, {"votes", "--file", "a"},
	}
	for _, args := range bad {
		if _, err := command.Parse(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	c, err := command.Parse([]string{"federal-budgets", "--url", "https://x", "--source", "outlays", "--every", "1h", "--full-snapshot", "--on-error", "skip"})
	if err != nil || c.Family != mirror.FederalBudgets || c.Source != "mts" || c.Every != time.Hour || !c.FullSnapshot || c.OnError != mirror.OnErrorSkip {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := command.Parse([]string{"bills", "--file", "x"}); err != nil || c.OnError != mirror.OnErrorStop || c.Source != "congressgov" {
		t.Fatalf("default on-error: %+v %v", c, err)
	}
}

func TestFileImportReportsPositionsAndProgress(t *testing.T) {
	pool := migratedtest.Pool(t)
	var out bytes.Buffer
	c, err := command.Parse([]string{"members", "--file", "../legislators/testdata/malformed.yaml", "--on-error", "skip"})
	if err != nil {
		t.Fatal(err)
	}
	if err := command.Run(context.Background(), pool, c, &out, false); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "line 12 (legislator 1)") || !strings.Contains(s, "done read=3 created=2") || strings.Contains(s, "\r") {
		t.Fatalf("output:\n%s", s)
	}
	// On a terminal: a \r-redrawn bar.
	out.Reset()
	c, _ = command.Parse([]string{"members", "--file", "../legislators/testdata/legislators.yaml"})
	if err := command.Run(context.Background(), pool, c, &out, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\rmembers/legislators [##############################] 100%") {
		t.Fatalf("tty output %q", out.String())
	}
	// Stop is the default: the error names the position.
	c, _ = command.Parse([]string{"members", "--file", "../legislators/testdata/malformed.yaml"})
	err = command.Run(context.Background(), pool, c, &out, false)
	if err == nil || !strings.Contains(err.Error(), "line 12") {
		t.Fatalf("%v", err)
	}
}

// lobbying_disclosures --url pages with page/page_size, dies mid-way, and a rerun resumes from the saved page.
func TestLDAResumesThroughCommand(t *testing.T) {
	pool := migratedtest.Pool(t)
	var fail atomic.Bool
	var pagesServed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("page_size"))
		if fail.Load() && page == 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		pagesServed.Add(1)
		var res []map[string]any
		for i := (page - 1) * size; i < min(page*size, 10); i++ {
			res = append(res, map[string]any{"filing_uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "filing_type": "Q1",
				"filing_year": 2026, "filing_period": "first_quarter", "registrant": map[string]any{"id": 1, "name": "R"},
				"client": map[string]any{"id": 2, "name": "C"}, "lobbying_activities": []any{}})
		}
		var next any
		if page*size < 10 {
			next = "https://lda.senate.gov/api/v1/filings/?page=" + strconv.Itoa(page+1)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": 10, "next": next, "results": res})
	}))
	defer srv.Close()
	c, err := command.Parse([]string{"lobbying_disclosures", "--url", srv.URL + "/api/v1/filings/?filing_year=2026", "--page-size", "3"})
	if err != nil {
		t.Fatal(err)
	}
	c.Client = &fetch.Client{MaxAttempts: 2, BaseDelay: time.Millisecond}
	var out bytes.Buffer
	fail.Store(true)
	if err := command.Run(context.Background(), pool, c, &out, false); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("%v", err)
	}
	fail.Store(false)
	before := pagesServed.Load()
	if err := command.Run(context.Background(), pool, c, &out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resuming") || pagesServed.Load()-before != 2 {
		t.Fatalf("pages after resume %d, output:\n%s", pagesServed.Load()-before, out.String())
	}
	var rows, events int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM lobbying_disclosures), (SELECT count(*) FROM change_events)`).Scan(&rows, &events); err != nil {
		t.Fatal(err)
	}
	if rows != 10 || events != 10 {
		t.Fatalf("rows %d events %d", rows, events)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// --every repeats the import until the context ends; later rounds find nothing changed.
func TestEveryRepeatsUntilCancelled(t *testing.T) {
	pool := migratedtest.Pool(t)
	c, err := command.Parse([]string{"members", "--file", "../legislators/testdata/legislators.yaml", "--every", "20ms"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- command.Run(ctx, pool, c, out, false) }()
	testenv.Eventually(t, 30*time.Second, "two repeated rounds that find nothing changed", func() error {
		if got := out.String(); strings.Count(got, "done read=2 created=0 updated=0 unchanged=2") < 2 {
			return fmt.Errorf("output so far:\n%s", got)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "done read=2 created=2") {
		t.Fatalf("first round missing:\n%s", out.String())
	}
}
