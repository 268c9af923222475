package contract

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestChangeFeedMatchesMigrations: the change-feed constants are what
// recordsd's migrations create and name — the table 0100_sync.sql creates,
// the lock key its reader contract names — and any channel a migration
// NOTIFYs (a trigger, say) is ChangeEventsChannel. The SQL is read as a file:
// contract imports nothing of the repository.
func TestChangeFeedMatchesMigrations(t *testing.T) {
	files, err := filepath.Glob("../../backend/migrations/sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found (%v)", err)
	}
	var sql strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sql.Write(b)
	}
	all := sql.String()
	if !regexp.MustCompile(`(?i)CREATE TABLE IF NOT EXISTS ` + ChangeEventsTable + ` \(`).MatchString(all) {
		t.Errorf("no migration creates the table %q", ChangeEventsTable)
	}
	keys := regexp.MustCompile(`pg_advisory_xact_lock\((\d+)\)`).FindAllStringSubmatch(all, -1)
	if len(keys) == 0 {
		t.Error("no migration names the change feed's pg_advisory_xact_lock key")
	}
	for _, k := range keys {
		if n, err := strconv.ParseInt(k[1], 10, 64); err != nil || n != ChangeEventsLockKey {
			t.Errorf("a migration names lock key %s; ChangeEventsLockKey is %d", k[1], ChangeEventsLockKey)
		}
	}
	channels := regexp.MustCompile(`(?i)(?:NOTIFY\s+|pg_notify\(\s*')([a-z_0-9]+)`).FindAllStringSubmatch(all, -1)
	for _, c := range channels {
		if c[1] != ChangeEventsChannel {
			t.Errorf("a migration notifies %q; ChangeEventsChannel is %q", c[1], ChangeEventsChannel)
		}
	}
}

// TestChangeFeedStatements: the lock statements name ChangeEventsLockKey and
// ChangeEventsChannel (they are written out so that they can be constants).
func TestChangeFeedStatements(t *testing.T) {
	key := strconv.FormatInt(ChangeEventsLockKey, 10)
	if want := "SELECT pg_advisory_xact_lock(" + key + "), pg_notify('" + ChangeEventsChannel + "', '')"; ChangeEventsWriteLockSQL != want {
		t.Errorf("ChangeEventsWriteLockSQL %q, want %q", ChangeEventsWriteLockSQL, want)
	}
	if want := "SELECT pg_advisory_xact_lock_shared(" + key + ")"; ChangeEventsSharedLockSQL != want {
		t.Errorf("ChangeEventsSharedLockSQL %q, want %q", ChangeEventsSharedLockSQL, want)
	}
}

// TestChangeFeedIsDocumented: docs/design.md D14 states the lock key and the
// channel a writer of another backend must use, and they are these.
func TestChangeFeedIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, d14, _ := strings.Cut(string(doc), "## D14 Change feed")
	d14, _, _ = strings.Cut(d14, "\n## ")
	for _, want := range []string{
		"`pg_advisory_xact_lock(" + strconv.FormatInt(ChangeEventsLockKey, 10) + ")`",
		"`NOTIFY " + ChangeEventsChannel + "`",
		"`" + ChangeEventsTable + "`",
	} {
		if !strings.Contains(d14, want) {
			t.Errorf("docs/design.md D14 does not say %s", want)
		}
	}
}
