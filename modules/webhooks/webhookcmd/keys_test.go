package webhookcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/civicgate/civicgate/modules/webhooks/internal/feedtest"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

const (
	oldMaterial = "the old sealing key material, 32 bytes or more"
	newMaterial = "the new sealing key material, 32 bytes or more"
)

// run runs a webhooks command with DATABASE_URL and the given key variables.
func run(t *testing.T, dsn string, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), args, &out, &errOut, func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return vars[k]
	})
	for _, m := range []string{oldMaterial, newMaterial} {
		if strings.Contains(out.String()+errOut.String(), m) {
			t.Fatalf("%v: key material in the output", args)
		}
	}
	return code, out.String(), errOut.String()
}

func mustBox(t *testing.T, materials ...string) *secretbox.Box {
	t.Helper()
	var ms [][]byte
	for _, m := range materials {
		ms = append(ms, []byte(m))
	}
	b, err := secretbox.New(ms...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRekeyReSealsEverySecretAndTheCanary: endpoints sealed with the old key
// (one with a previous secret from a rotation); check-key with the new key
// alone is refused with the message that says what to do; rekey with both
// re-seals every secret (current and previous) and the canary, after which
// the new key alone opens everything — the same secrets — and the old one is
// refused; a rerun re-seals nothing. A previous key that is not this
// database's is refused before anything changes.
func TestRekeyReSealsEverySecretAndTheCanary(t *testing.T) {
	db := feedtest.New(t)
	ctx := context.Background()
	org := db.NewOrg(t, "acme", "paid")
	old := store.New(db.Pool, mustBox(t, oldMaterial))
	secrets := map[string]string{}
	for range 3 {
		ep, secret, err := old.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: org.ID, URL: "https://example.org/h", Families: []string{"bills"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		secrets[ep.ID] = secret
	}
	var rotated string
	for id := range secrets {
		rotated = id
		break
	}
	if _, err := old.RotateSecret(ctx, time.Now(), org.ID, rotated, time.Hour); err != nil {
		t.Fatal(err)
	}

	newOnly := map[string]string{EnvSecretKey: newMaterial}
	both := map[string]string{EnvSecretKey: newMaterial, EnvPreviousSecretKey: oldMaterial}
	code, _, stderr := run(t, db.DSN, newOnly, "check-key")
	if code != 1 || !strings.Contains(stderr, "CIVIC_WEBHOOK_SECRET_KEY (the civic_webhooks secret_key option)") ||
		!strings.Contains(stderr, "civicgate webhooks rekey") {
		t.Fatalf("check-key with another key: exit %d, %q", code, stderr)
	}
	code, _, stderr = run(t, db.DSN, map[string]string{EnvSecretKey: newMaterial, EnvPreviousSecretKey: "not this database's key, but long enough"}, "rekey")
	if code != 1 || !strings.Contains(stderr, "nothing was re-sealed") {
		t.Fatalf("rekey with a wrong previous key: exit %d, %q", code, stderr)
	}
	code, _, stderr = run(t, db.DSN, newOnly, "rekey")
	if code != 1 || !strings.Contains(stderr, "CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY is not set") {
		t.Fatalf("rekey without the old key: exit %d, %q", code, stderr)
	}

	code, stdout, stderr := run(t, db.DSN, both, "rekey", "--batch", "2")
	if code != 0 || !strings.Contains(stdout, "3 endpoints, 4 secrets re-sealed") || !strings.Contains(stdout, "canary re-sealed") {
		t.Fatalf("rekey: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, _ = run(t, db.DSN, both, "rekey"); code != 0 || !strings.Contains(stdout, "3 endpoints, 0 secrets re-sealed") ||
		!strings.Contains(stdout, "canary already sealed with it") {
		t.Fatalf("rerun: exit %d, %q", code, stdout)
	}
	if code, stdout, _ = run(t, db.DSN, newOnly, "check-key"); code != 0 || !strings.Contains(stdout, "opens") {
		t.Fatalf("check-key with the new key after rekey: exit %d, %q", code, stdout)
	}
	if code, _, _ = run(t, db.DSN, map[string]string{EnvSecretKey: oldMaterial}, "check-key"); code != 1 {
		t.Fatalf("the old key still passes after rekey: exit %d", code)
	}
	newBox := mustBox(t, newMaterial)
	rows, err := db.Pool.Query(ctx, `SELECT id, secret_sealed, prev_secret_sealed FROM civicgate.webhook_endpoints`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var cur, prev []byte
		if err := rows.Scan(&id, &cur, &prev); err != nil {
			t.Fatal(err)
		}
		plain, err := newBox.Open(cur, []byte(id))
		if err != nil || (id != rotated && string(plain) != secrets[id]) {
			t.Fatalf("%s: the new key alone opens %q, %v", id, plain, err)
		}
		if id == rotated {
			if plain, err := newBox.Open(prev, []byte(id)); err != nil || string(plain) != secrets[id] {
				t.Fatalf("%s: previous secret %q, %v", id, plain, err)
			}
		} else if prev != nil {
			t.Fatalf("%s: a previous secret appeared", id)
		}
	}
}

// TestRekeyReportsSecretsNoKeyOpens: a row another key sealed is left as it
// is and named; the rest is re-sealed.
func TestRekeyReportsSecretsNoKeyOpens(t *testing.T) {
	db := feedtest.New(t)
	ctx := context.Background()
	org := db.NewOrg(t, "acme", "paid")
	old := store.New(db.Pool, mustBox(t, oldMaterial))
	var ids []string
	for range 2 {
		ep, _, err := old.CreateEndpoint(ctx, time.Now(), store.EndpointSpec{Org: org.ID, URL: "https://example.org/h", Families: []string{"bills"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ep.ID)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET secret_sealed = substring(secret_sealed FROM 1 FOR 20) WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, db.DSN, map[string]string{EnvSecretKey: newMaterial, EnvPreviousSecretKey: oldMaterial}, "rekey")
	if code != 0 || !strings.Contains(stdout, "2 endpoints, 1 secrets re-sealed") || !strings.Contains(stdout, "1 endpoints have a secret neither key opens") ||
		!strings.Contains(stdout, ids[1]) {
		t.Fatalf("exit %d, %q %q", code, stdout, stderr)
	}
}
