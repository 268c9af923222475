package reliability

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/usageexport/export"
)

// hostileEvents is one event whose organization and key ids are markup and
// spreadsheet formulas.
func hostileEvents() []export.Event {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var evs []export.Event
	for _, id := range []string{`=HYPERLINK("http://evil.example","x")`, "+1+1", "-2+3", "@SUM(A1)", "\tlead", "\rlead", "<script>alert(1)</script>"} {
		evs = append(evs, export.NewEvent(export.Hour{KeyID: id, OrgID: id, Start: start, Requests: 1}, ""))
	}
	return evs
}

// TestUsageExportSinkRedirectsAreNotFollowed: a sink answering with a
// redirect — to loopback, or to the cloud metadata address — is a failed
// delivery: the target is never requested, the credentials header never
// leaves for it, and the error names the status only.
func TestUsageExportSinkRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	var canaryHits atomic.Int32
	canary := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { canaryHits.Add(1) }))
	defer canary.Close()
	for _, target := range []string{canary.URL + "/steal", "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/"} {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, http.StatusTemporaryRedirect)
		}))
		s := &export.Sink{URL: sink.URL, Header: "Authorization", Value: "Bearer om_secret", Timeout: 5 * time.Second}
		err := s.Send(context.Background(), hostileEvents())
		sink.Close()
		var se *export.SendError
		if !errors.As(err, &se) || se.Status != http.StatusTemporaryRedirect || strings.Contains(err.Error(), "169.254") ||
			strings.Contains(err.Error(), "om_secret") {
			t.Errorf("redirect to %s: %v", target, err)
		}
	}
	if n := canaryHits.Load(); n != 0 {
		t.Errorf("the redirect target was requested %d times", n)
	}
}

// TestUsageExportSlowAndHugeSinks: a sink that never answers costs the
// request timeout and is reported as a timeout; a sink answering with an
// endless body is read no further than a few KiB — the delivery finishes
// promptly — and nothing of a body reaches the error.
func TestUsageExportSlowAndHugeSinks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	began := time.Now()
	err := (&export.Sink{URL: slow.URL, Timeout: 300 * time.Millisecond}).Send(context.Background(), hostileEvents())
	var se *export.SendError
	if !errors.As(err, &se) || se.Cause != "timeout" {
		t.Errorf("slow sink: %v", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("slow sink held the delivery %s with a 300ms timeout", took)
	}

	for _, status := range []int{http.StatusOK, http.StatusBadGateway} {
		var written atomic.Int64
		huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			chunk := bytes.Repeat([]byte("SINK-BODY "), 6554) // 64 KiB
			for i := 0; i < 16384; i++ {                      // up to 1 GiB
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		err := (&export.Sink{URL: huge.URL, Timeout: 30 * time.Second}).Send(context.Background(), hostileEvents())
		huge.Close()
		switch {
		case status == http.StatusOK && err != nil:
			t.Errorf("huge 200: %v", err)
		case status != http.StatusOK && (err == nil || strings.Contains(err.Error(), "SINK-BODY")):
			t.Errorf("huge %d: %v", status, err)
		}
		if w := written.Load(); w >= 1<<30 {
			t.Errorf("status %d: the whole 1 GiB body was read", status)
		}
	}
}

// TestUsageExportErrorsHoldNoURLSecrets: a sink URL with credentials and a
// token in its query, unreachable, gives an error holding neither.
func TestUsageExportErrorsHoldNoURLSecrets(t *testing.T) {
	t.Parallel()
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(ln.URL, "http://")
	ln.Close() // nothing listens there now
	err := (&export.Sink{URL: "http://user:pa55@" + addr + "/ingest?token=s3cr3t", Timeout: 5 * time.Second}).
		Send(context.Background(), hostileEvents())
	if err == nil || strings.Contains(err.Error(), "pa55") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v", err)
	}
}

// TestUsageExportCSVAndJSONNeutraliseMarkup: in CSV every cell starting with
// =, +, -, @, a tab or a carriage return is prefixed with ' (read back as
// text by a spreadsheet), and JSON escapes markup; the ids survive as data.
func TestUsageExportCSVAndJSONNeutraliseMarkup(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := export.WriteEvents(&out, export.FormatCSV, hostileEvents()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		for _, cell := range r[1:3] { // org_id, key_id
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("cell %q would run as a formula", cell)
			}
		}
	}
	if recs[1][1] != `'=HYPERLINK("http://evil.example","x")` || recs[3][2] != "'-2+3" || recs[7][1] != "<script>alert(1)</script>" {
		t.Errorf("cells: %q", recs)
	}
	for _, format := range []string{export.FormatJSON, export.FormatCloudEvents} {
		out.Reset()
		if err := export.WriteEvents(&out, format, hostileEvents()); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "<script>") || !strings.Contains(out.String(), `\u003cscript\u003e`) {
			t.Errorf("%s: markup not escaped:\n%s", format, out.String())
		}
	}
}
