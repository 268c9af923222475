package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/store"
)

var testMaterial = []byte("0123456789abcdef0123456789abcdef")

// TestKeyCanaryRefusesAnotherKey: the first key to check creates the
// canary; another key is refused before it seals or claims anything; the
// two keys together (a rotation) pass.
func TestKeyCanaryRefusesAnotherKey(t *testing.T) {
	db, s := newStore(t)
	if err := s.CheckKey(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM civicgate.webhook_key_canary`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d canaries: %v", n, err)
	}
	other := store.New(db.Pool, box(t, otherMaterial))
	if err := other.CheckKey(ctxT(t)); !errors.Is(err, store.ErrWrongKey) {
		t.Fatalf("another key: %v", err)
	}
	org := db.NewOrg(t, "a", "paid")
	if _, _, err := other.CreateEndpoint(ctxT(t), time.Now(), store.EndpointSpec{Org: org.ID, URL: "https://example.org/",
		Families: []string{"bills"}}, 0); !errors.Is(err, store.ErrWrongKey) {
		t.Fatalf("another key sealed a secret: %v", err)
	}
	if _, err := other.Claim(ctxT(t), time.Now(), claimParams(1, 1), store.RenderEnvelope); !errors.Is(err, store.ErrWrongKey) {
		t.Fatalf("another key claimed: %v", err)
	}
	if err := store.New(db.Pool, box(t, otherMaterial, testMaterial)).CheckKey(ctxT(t)); err != nil {
		t.Fatalf("new key with the old one: %v", err)
	}
	for _, hint := range []string{"CIVIC_WEBHOOK_SECRET_KEY", "secret_key", "civicgate webhooks rekey", "restore"} {
		if !strings.Contains(store.WrongKeyHint, hint) {
			t.Errorf("hint lacks %q", hint)
		}
	}
}

// TestMissingCanaryIsCreatedOnlyByAKeyThatOpensTheSecrets: a database whose
// endpoints were sealed before the canary existed (or whose canary was
// deleted to recover from tampering) gets one only from a key that opens at
// least one of its newest endpoint secrets.
func TestMissingCanaryIsCreatedOnlyByAKeyThatOpensTheSecrets(t *testing.T) {
	db, s := newStore(t)
	org := db.NewOrg(t, "a", "paid")
	endpointFor(t, s, org, "live", "bills")
	if _, err := db.Pool.Exec(ctxT(t), `DELETE FROM civicgate.webhook_key_canary`); err != nil {
		t.Fatal(err)
	}
	err := store.New(db.Pool, box(t, otherMaterial)).CheckKey(ctxT(t))
	if !errors.Is(err, store.ErrWrongKey) || !strings.Contains(err.Error(), "none of the 1 newest endpoint secrets") {
		t.Fatalf("another key created the canary: %v", err)
	}
	if err := store.New(db.Pool, box(t, testMaterial)).CheckKey(ctxT(t)); err != nil {
		t.Fatalf("the right key: %v", err)
	}
	if err := store.New(db.Pool, box(t, otherMaterial)).CheckKey(ctxT(t)); !errors.Is(err, store.ErrWrongKey) {
		t.Fatalf("after re-creation: %v", err)
	}
}

// TestTamperedCanaryRefusesEveryKey: a canary that is not a sealed value
// (truncated, flipped, empty) opens with no key: the start is refused.
func TestTamperedCanaryRefusesEveryKey(t *testing.T) {
	db, s := newStore(t)
	if err := s.CheckKey(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, tamper := range []string{
		`UPDATE civicgate.webhook_key_canary SET sealed = substring(sealed FROM 1 FOR 20)`,
		`UPDATE civicgate.webhook_key_canary SET sealed = set_byte(sealed, 30, get_byte(sealed, 30) # 1)`,
		`UPDATE civicgate.webhook_key_canary SET sealed = ''::bytea`,
	} {
		if _, err := db.Pool.Exec(ctxT(t), `DELETE FROM civicgate.webhook_key_canary`); err != nil {
			t.Fatal(err)
		}
		if err := store.New(db.Pool, box(t, testMaterial)).CheckKey(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctxT(t), tamper); err != nil {
			t.Fatal(err)
		}
		if err := store.New(db.Pool, box(t, testMaterial)).CheckKey(ctxT(t)); !errors.Is(err, store.ErrWrongKey) {
			t.Fatalf("%s: %v", tamper, err)
		}
	}
}
