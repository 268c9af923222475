package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder captures the failures CheckLogs reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func TestCheckLogsFindsLeaks(t *testing.T) {
	const key = "cg_live_4f9Qx2mZ8kLpR7tW1yB3nC5vD6hJ0aE"
	clean := `{"level":"info","msg":"handled request","request":{"uri":"/v1/graphql?q=selection","headers":{"Authorization":["REDACTED"]}}}`
	for name, tc := range map[string]struct {
		log  string
		want string
	}{
		"clean":         {clean, ""},
		"key":           {clean + "\nBearer " + key, "secret"},
		"key tail":      {clean + "\n…" + key[len(key)-20:], "secret"},
		"panic":         {clean + "\npanic: runtime error: index out of range", "panic"},
		"goroutine":     {"goroutine 17 [running]:\nmain.main()", "goroutine"},
		"sql":           {`{"msg":"query failed","sql":"SELECT id, title FROM bills WHERE id = $1"}`, "select"},
		"sql lowercase": {`{"cause":"insert into api_keys (hash) values"}`, "insert"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.log")
			if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			r := &recorder{TB: t}
			(&Stack{Logs: []string{path}}).CheckLogs(r, key)
			switch {
			case tc.want == "" && len(r.errs) > 0:
				t.Fatalf("clean log reported: %v", r.errs)
			case tc.want != "" && (len(r.errs) == 0 || !strings.Contains(strings.ToLower(strings.Join(r.errs, " ")), tc.want)):
				t.Fatalf("want a %q report, got %v", tc.want, r.errs)
			}
		})
	}
}
