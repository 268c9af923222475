package consolestore

import (
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// newSignup stores a pending request for email and returns its link token.
func newSignup(t *testing.T, pool *pgxpool.Pool, email string) string {
	t.Helper()
	var tok string
	if err := CreateSignup(t.Context(), pool, SignupSpec{Email: email, Name: "N", Organization: "O", IntendedUse: "U",
		TermsURL: "https://example.org/terms"}, func(_ pgx.Tx, _, token string) error {
		tok = token
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSignupLinksOncePerAddress: an address's two links used at once make
// one sign-up; the other is refused (ErrAddressTaken) and rolled back, link
// included; a used, expired or unknown link is refused alike; a request is
// decided once.
func TestSignupLinksOncePerAddress(t *testing.T) {
	pool, _ := newPool(t)
	toks := []string{newSignup(t, pool, "Ada@Example.org"), newSignup(t, pool, "ada@example.org")}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Go(func() {
			_, errs[i] = ClaimSignupLink(t.Context(), pool, tok, func(tx pgx.Tx, s Signup) (string, string, error) {
				taken, err := AddressHasSignup(t.Context(), tx, s.Email)
				if err != nil {
					return "", "", err
				}
				if taken {
					return "", "", ErrAddressTaken
				}
				return SignupAwaiting, "", nil
			})
		})
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), ErrAddressTaken) {
		t.Fatalf("two links of one address: %v", errs)
	}
	used := toks[0]
	if errs[0] != nil {
		used = toks[1]
	}
	refuse := func(tx pgx.Tx, s Signup) (string, string, error) { return SignupDone, "", nil }
	for what, tok := range map[string]string{"used": used, "unknown": "x" + used[1:], "empty": ""} {
		if _, err := ClaimSignupLink(t.Context(), pool, tok, refuse); !errors.Is(err, ErrSignupRefused) {
			t.Errorf("%s link: %v", what, err)
		}
	}
	fresh := newSignup(t, pool, "late@example.org")
	if _, err := pool.Exec(t.Context(), `UPDATE civicgate.console_signups SET expires_at = now() - interval '1 second' WHERE email = 'late@example.org'`); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimSignupLink(t.Context(), pool, fresh, refuse); !errors.Is(err, ErrSignupRefused) {
		t.Errorf("expired link: %v", err)
	}
	list, err := ListSignups(t.Context(), pool, SignupAwaiting, 10)
	if err != nil || len(list) != 1 || list[0].Email != "ada@example.org" {
		t.Fatalf("awaiting %+v %v", list, err)
	}
	var token string
	if _, err := DecideSignup(t.Context(), pool, list[0].ID, true, "op@example.org", func(_ pgx.Tx, _ Signup, tok string) error {
		token = tok
		return nil
	}); err != nil || token == "" {
		t.Fatalf("approve: %q %v", token, err)
	}
	if _, err := DecideSignup(t.Context(), pool, list[0].ID, false, "op@example.org", func(pgx.Tx, Signup, string) error { return nil }); !errors.Is(err, ErrSignupRefused) {
		t.Errorf("decided twice: %v", err)
	}
	if s, err := ClaimSignupLink(t.Context(), pool, token, refuse); err != nil || s.Status != SignupDone || s.DecidedBy != "op@example.org" {
		t.Errorf("the approval's link: %+v %v", s, err)
	}
}
