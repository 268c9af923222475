package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/civicgate/civicgate/internal/testkit/stack"
)

// TestAccessLogNamesTheCaller: an access log line carries the key id,
// organization and tier of the request (routes.caddy's log_append), never
// the key; a refused key's line has them empty (docs/operations.md "Metrics,
// logs and health").
func TestAccessLogNamesTheCaller(t *testing.T) {
	s := stack.New(t, &bins)
	s.Prepare()
	s.StartRecordsd()
	gw := s.StartGateway("caddyfile/Caddyfile.local")
	key, id := s.IssueKey("logco", "free", "live")
	for _, bearer := range []string{key, "cg_live_" + "0000000000000000000000000000000000000000000"} {
		req, _ := http.NewRequest(http.MethodGet, s.HTTPSURL+"/bills?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	type line struct {
		Logger string `json:"logger"`
		Status int    `json:"status"`
		KeyID  string `json:"key_id"`
		Org    string `json:"org"`
		Tier   string `json:"tier"`
		Req    struct {
			URI string `json:"uri"`
		} `json:"request"`
	}
	var ok, refused *line
	stack.WaitFor(t, 30*time.Second, "both access log lines", func() error {
		f, err := os.Open(gw.Log)
		if err != nil {
			return err
		}
		defer f.Close()
		ok, refused = nil, nil
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Req.URI != "/bills?limit=1" {
				continue
			}
			switch l.Status {
			case http.StatusOK:
				ok = &l
			case http.StatusUnauthorized:
				refused = &l
			}
		}
		if ok == nil || refused == nil {
			return os.ErrNotExist
		}
		return nil
	})
	if ok.KeyID != id || ok.Org == "" || ok.Tier != "free" {
		t.Fatalf("admitted request's line: key_id %q org %q tier %q, want %s, an org, free", ok.KeyID, ok.Org, ok.Tier, id)
	}
	if refused.KeyID != "" || refused.Tier != "" {
		t.Fatalf("refused key's line names a caller: %+v", refused)
	}
	s.CheckLogs(t, key)
}
