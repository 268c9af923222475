package stack

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// leakPatterns are things that must never appear in any process's log: a
// panic or a goroutine dump, and SQL text. Each is tried only on lines that
// hold one of its cheap markers (a soak's access log runs to tens of MiB).
var leakPatterns = []struct {
	markers []string
	re      *regexp.Regexp
}{
	{[]string{"panic", "runtime error", "goroutine "}, regexp.MustCompile(`panic:|runtime error|goroutine \d+ \[`)},
	{[]string{"SELECT", "select", "Select", "INSERT", "insert", "Insert", "UPDATE", "update", "Update", "DELETE", "delete", "Delete"},
		regexp.MustCompile(`(?i)\b(select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from)\b`)},
}

// CheckLogs fails the test when any log of the stack contains one of the
// secrets (or its last 20 characters), a panic or stack trace, or SQL text.
func (s *Stack) CheckLogs(t testing.TB, secrets ...string) {
	t.Helper()
	var needles [][]byte
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		needles = append(needles, []byte(secret))
		if len(secret) > 20 {
			needles = append(needles, []byte(secret[len(secret)-20:]))
		}
	}
	for _, path := range s.Logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read log: %v", err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s contains a secret (…%s)", filepath.Base(path), n[:min(len(n), 6)])
			}
		}
		for len(b) > 0 {
			line, rest, _ := bytes.Cut(b, []byte("\n"))
			b = rest
			for _, p := range leakPatterns {
				hit := false
				for _, m := range p.markers {
					if bytes.Contains(line, []byte(m)) {
						hit = true
						break
					}
				}
				if hit && p.re.Match(line) {
					t.Errorf("%s matches %s: %.600s", filepath.Base(path), p.re, line)
				}
			}
		}
	}
}
