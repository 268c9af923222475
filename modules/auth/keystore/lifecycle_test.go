package keystore

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLifecycleRoundTrip: a key issued with an expiry, a name and labels
// keeps them in PostgreSQL and in a keys file alike — the lookup the gateway
// caches returns them, List and ListFile show them — and a rotation's new key
// keeps them.
func TestLifecycleRoundTrip(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	expires := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Microsecond)
	life := Lifecycle{Name: "Acme's <nightly> export", Labels: map[string]string{"team": "data", "cost.center": "42 / b"}, ExpiresAt: expires}
	path := filepath.Join(t.TempDir(), "keys.json")

	type issued struct {
		store string
		iss   Issued
		rec   func(Hash) Record
		list  func() []KeyInfo
	}
	pgIss, err := IssueWith(ctx, pool, IssueSpec{Org: "acme", Tier: "free", Env: EnvLive, Lifecycle: life})
	if err != nil {
		t.Fatal(err)
	}
	fileIss, err := IssueToFileWith(path, IssueSpec{Org: "acme", Tier: "free", Env: EnvLive, Lifecycle: life})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []issued{
		{"postgres", pgIss, func(h Hash) Record {
			r, err := Lookup(ctx, pool, h)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, func() []KeyInfo {
			l, err := List(ctx, pool, ListFilter{Org: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"file", fileIss, func(h Hash) Record {
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			idx, err := f.Index()
			if err != nil {
				t.Fatal(err)
			}
			return idx[h]
		}, func() []KeyInfo {
			l, err := ListFile(path, ListFilter{Org: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
	} {
		r := c.rec(HashKey(c.iss.Key))
		if r.Name != life.Name || !maps.Equal(r.Labels, life.Labels) || !r.ExpiresAt.Equal(expires) {
			t.Errorf("%s: looked-up record %+v, want the lifecycle %+v", c.store, r, life)
		}
		if r.Expired(expires.Add(-time.Nanosecond)) || !r.Expired(expires) || r.EffectiveStatus(expires) != StatusExpired {
			t.Errorf("%s: the record's expiry is not its instant: %+v", c.store, r)
		}
		l := c.list()
		if len(l) != 1 || l[0].Name != life.Name || !maps.Equal(l[0].Labels, life.Labels) || l[0].ExpiresAt == nil ||
			!l[0].ExpiresAt.Equal(expires) || l[0].Status != StatusActive {
			t.Errorf("%s: listed %+v", c.store, l)
		}
	}

	rot, err := Rotate(ctx, pool, RotateSpec{Org: "acme", Env: EnvLive, Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Lookup(ctx, pool, HashKey(rot.Key)); err != nil || r.Name != life.Name || !maps.Equal(r.Labels, life.Labels) || !r.ExpiresAt.Equal(expires) {
		t.Errorf("postgres: the rotated-in key's record %+v %v, want the old key's lifecycle", r, err)
	}
	frot, err := RotateFile(path, RotateSpec{Org: "acme", Env: EnvLive, Overlap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := ReadFile(path)
	idx, _ := f.Index()
	if r := idx[HashKey(frot.Key)]; r.Name != life.Name || !maps.Equal(r.Labels, life.Labels) || !r.ExpiresAt.Equal(expires) {
		t.Errorf("file: the rotated-in key's record %+v, want the old key's lifecycle", r)
	}

	// A key without a lifecycle has none, and no labels rather than an empty map.
	plain, err := Issue(ctx, pool, "plain", "free", EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Lookup(ctx, pool, HashKey(plain.Key)); err != nil || r.Name != "" || r.Labels != nil || !r.ExpiresAt.IsZero() || r.Expired(time.Now().Add(1e6*time.Hour)) {
		t.Errorf("a plain key's record %+v %v", r, err)
	}
}

// TestExpiredKeysAreNotLive: an organization's expired keys do not hold one
// of its two live-key slots, are not rotated, and list as expired — in
// PostgreSQL and a keys file alike; List --expiring keeps the live keys
// expiring within the window only.
func TestExpiredKeysAreNotLive(t *testing.T) {
	pool, _ := migratedPool(t)
	ctx := context.Background()
	a, err := IssueWith(ctx, pool, IssueSpec{Org: "acme", Tier: "free", Env: EnvLive, Lifecycle: Lifecycle{ExpiresAt: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	soon, err := IssueWith(ctx, pool, IssueSpec{Org: "acme", Tier: "free", Env: EnvLive, Lifecycle: Lifecycle{ExpiresAt: time.Now().Add(3 * 24 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(ctx, pool, "acme", "free", EnvLive); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a third live key: %v, want ErrTooManyKeys", err)
	}
	// Key a as it is once its hour has passed (created and expired in the past).
	if _, err := pool.Exec(ctx, `UPDATE civicgate.api_keys SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := Lookup(ctx, pool, HashKey(a.Key)); err != nil || r.EffectiveStatus(time.Now()) != StatusExpired || r.Status != StatusActive {
		t.Fatalf("expired key: %+v %v", r, err)
	}
	third, err := Issue(ctx, pool, "acme", "free", EnvLive)
	if err != nil {
		t.Fatalf("an expired key still held a live slot: %v", err)
	}
	all, err := List(ctx, pool, ListFilter{Org: "acme"})
	if err != nil || len(all) != 3 || all[0].ID != a.ID || all[0].Status != StatusExpired {
		t.Fatalf("list: %+v %v", all, err)
	}
	expiring, err := List(ctx, pool, ListFilter{Org: "acme", ExpiringWithin: 7 * 24 * time.Hour})
	if err != nil || len(expiring) != 1 || expiring[0].ID != soon.ID {
		t.Fatalf("--expiring 7d: %+v %v, want only %s (the expired and the unexpiring keys are not listed)", expiring, err, soon.ID)
	}
	if e, _ := List(ctx, pool, ListFilter{ExpiringWithin: 48 * time.Hour}); len(e) != 0 {
		t.Fatalf("--expiring 48h: %+v, want none", e)
	}
	// Rotate takes the oldest live key (soon), never the expired one.
	rot, err := Rotate(ctx, pool, RotateSpec{Org: "acme", Env: EnvLive})
	if err != nil || len(rot.RotatedOut) != 1 || rot.RotatedOut[0] != soon.ID {
		t.Fatalf("rotate: %+v %v, want %s rotated out", rot, err, soon.ID)
	}
	rev, err := Revoke(ctx, pool, a.ID)
	if err != nil || rev.Was != StatusExpired {
		t.Fatalf("revoke of the expired key: %+v %v", rev, err)
	}
	_ = third

	// The same in a keys file, whose expired key is written by hand.
	path := filepath.Join(t.TempDir(), "keys.json")
	if _, err := IssueToFileWith(path, IssueSpec{Org: "acme", Tier: "free", Env: EnvLive, Lifecycle: Lifecycle{ExpiresAt: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := IssueToFile(path, "acme", "free", EnvLive); err != nil {
		t.Fatal(err)
	}
	if _, err := IssueToFile(path, "acme", "free", EnvLive); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("file: a third live key: %v", err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute).UTC()
	f.Keys[0].ExpiresAt = &past
	if err := writeFile(path, f); err != nil {
		t.Fatal(err)
	}
	if _, err := IssueToFile(path, "acme", "free", EnvLive); err != nil {
		t.Fatalf("file: an expired key still held a live slot: %v", err)
	}
	l, err := ListFile(path, ListFilter{})
	if err != nil || len(l) != 3 || l[0].Status != StatusExpired {
		t.Fatalf("file list: %+v %v", l, err)
	}
}

// TestLifecycleCheck: the bounds of a name, labels and expiry, each refusal
// matching ErrBadLifecycle and quoting no name or value.
func TestLifecycleCheck(t *testing.T) {
	now := time.Now()
	sixteen := map[string]string{}
	for i := range MaxLabels {
		sixteen[string(rune('a'+i))] = "v"
	}
	ok := []Lifecycle{
		{},
		{Name: strings.Repeat("é", MaxNameLen), Labels: sixteen},
		{Labels: map[string]string{strings.Repeat("k", 32): strings.Repeat("ü", MaxLabelValueLen), "a.b-c_d": ""}},
		{ExpiresAt: now.Add(time.Second)},
		{ExpiresAt: now.Add(MaxExpiryAhead - time.Minute)},
		{Name: "<script>alert(1)</script>", Labels: map[string]string{"x": `"'&<>`}}, // markup is printable: escaped where shown
	}
	for i, l := range ok {
		if err := l.Check(now); err != nil {
			t.Errorf("ok %d: %v", i, err)
		}
	}
	seventeen := maps.Clone(sixteen)
	seventeen["q"] = "v"
	bad := map[string]Lifecycle{
		"long name":      {Name: strings.Repeat("n", MaxNameLen+1)},
		"newline name":   {Name: "a\nb"},
		"tab name":       {Name: "a\tb"},
		"escape name":    {Name: "a\x1b[31mb"},
		"bidi name":      {Name: "abc\u202edef"},
		"line sep name":  {Name: "a\u2028b"},
		"bad utf-8 name": {Name: "a\xffb"},
		"17 labels":      {Labels: seventeen},
		"upper key":      {Labels: map[string]string{"Team": "x"}},
		"long key":       {Labels: map[string]string{strings.Repeat("k", 33): "x"}},
		"empty key":      {Labels: map[string]string{"": "x"}},
		"markup key":     {Labels: map[string]string{"<b>": "x"}},
		"long value":     {Labels: map[string]string{"k": strings.Repeat("v", MaxLabelValueLen+1)}},
		"nul value":      {Labels: map[string]string{"k": "a\x00b"}},
		"C1 value":       {Labels: map[string]string{"k": "a\u0085b"}},
		"past expiry":    {ExpiresAt: now.Add(-time.Second)},
		"now expiry":     {ExpiresAt: now},
		"far future":     {ExpiresAt: now.Add(MaxExpiryAhead + time.Hour)},
		"year 10000-ish": {ExpiresAt: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		"key in a name":  {Name: "mine: cg_live_" + strings.Repeat("A", 43)},
		"key in a value": {Labels: map[string]string{"k": "cg_test_" + strings.Repeat("b", 43)}},
	}
	for what, l := range bad {
		err := l.Check(now)
		if !errors.Is(err, ErrBadLifecycle) {
			t.Errorf("%s: %v, want ErrBadLifecycle", what, err)
			continue
		}
		for _, v := range l.Labels {
			if len(v) > 3 && strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error quotes the value: %v", what, err)
			}
		}
		if len(l.Name) > 3 && strings.Contains(err.Error(), l.Name[:4]) {
			t.Errorf("%s: the error quotes the name: %v", what, err)
		}
	}
}

// TestParseExpiry: durations, whole days and RFC 3339 times with their
// offset (in UTC after), and what is refused.
func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"30d":                       now.Add(30 * 24 * time.Hour),
		"90m":                       now.Add(90 * time.Minute),
		"720h":                      now.Add(720 * time.Hour),
		"2027-01-31T00:00:00Z":      time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31T00:00:00+14:00": time.Date(2027, 1, 30, 10, 0, 0, 0, time.UTC),
		"2027-01-31T00:00:00-12:00": time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC),
		"2027-01-31T00:00:00+23:59": time.Date(2027, 1, 30, 0, 1, 0, 0, time.UTC),
	} {
		got, err := ParseExpiry(in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "0d", "-5d", "-1h", "d", "1.5d", "10000000d", "soon", "2027-01-31", "2027-01-31T00:00:00",
		"2027-01-31 00:00:00Z", "10000-01-01T00:00:00Z", "2027-01-31T00:00:00+25:00", "2027-01-31T00:00:00+24:00", "2027-01-31T00:00:00-24:00", "2027-02-30T00:00:00Z", "1h\n"} {
		if got, err := ParseExpiry(in, now); !errors.Is(err, ErrBadLifecycle) {
			t.Errorf("%q: %v %v, want refused", in, got, err)
		} else if strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("%q: the error holds a control character: %q", in, err)
		}
	}
}

// TestKeysFileLifecycle: a hand-written keys file's expires_at, name and
// labels are read (with any offset) and checked like the CLI's values; a
// bad one names the key, never the value.
func TestKeysFileLifecycle(t *testing.T) {
	h := strings.Repeat("ab", 32)
	key := func(extra string) []byte {
		return []byte(`{"keys":[{"id":"key_a","org":"org_a","org_name":"a","org_status":"active","env":"live","tier":"free",` +
			`"status":"active","sha256":"` + h + `","prefix":"cg_live_abcd","created_at":"2026-01-01T00:00:00Z"` + extra + `}]}`)
	}
	f, err := ParseFile(key(`,"expires_at":"2027-01-31T00:00:00+14:00","name":"nightly","labels":{"team":"data"}`))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := f.Index()
	if err != nil {
		t.Fatal(err)
	}
	var hash Hash
	for k := range idx {
		hash = k
	}
	if r := idx[hash]; !r.ExpiresAt.Equal(time.Date(2027, 1, 30, 10, 0, 0, 0, time.UTC)) || r.Name != "nightly" || r.Labels["team"] != "data" {
		t.Fatalf("record %+v", r)
	}
	// An expiry already past is accepted: the key is kept, and refused.
	if _, err := ParseFile(key(`,"expires_at":"2020-01-01T00:00:00Z"`)); err != nil {
		t.Fatalf("a past expiry: %v", err)
	}
	for what, extra := range map[string]string{
		"control name":  `,"name":"a\u001bb"`,
		"newline value": `,"labels":{"k":"a\nb"}`,
		"bad key":       `,"labels":{"K K":"v"}`,
		"labels array":  `,"labels":["a"]`,
		"year 10000":    `,"expires_at":"10000-01-01T00:00:00Z"`,
		"no offset":     `,"expires_at":"2027-01-01T00:00:00"`,
		"unknown":       `,"expires":"2027-01-01T00:00:00Z"`,
	} {
		_, err := ParseFile(key(extra))
		if err == nil {
			t.Errorf("%s: accepted", what)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\x1b") || strings.Contains(err.Error(), h) {
			t.Errorf("%s: the error quotes the file: %q", what, err)
		}
	}
}
