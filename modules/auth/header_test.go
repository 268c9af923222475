package auth

import (
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

const wellFormed = "cg_live_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefg"

func TestParseAuthorization(t *testing.T) {
	if !keystore.WellFormed(wellFormed) {
		t.Fatal("fixture key not well-formed")
	}
	for _, c := range []struct {
		name    string
		v       string
		present bool
		want    headerProblem
	}{
		{"absent", "", false, headerMissing},
		{"empty", "", true, headerMalformed},
		{"scheme only", "Bearer", true, headerMalformed},
		{"scheme and space", "Bearer ", true, headerMalformed},
		{"basic", "Basic " + wellFormed, true, headerMalformed},
		{"two spaces", "Bearer  " + wellFormed, true, headerMalformed},
		{"trailing space", "Bearer " + wellFormed + " ", true, headerMalformed},
		{"garbage", "Bearer not-a-key", true, headerMalformed},
		{"short", "Bearer " + wellFormed[:len(wellFormed)-1], true, headerMalformed},
		{"bad env", "Bearer cg_prod_" + wellFormed[8:], true, headerMalformed},
		{"non base62", "Bearer " + wellFormed[:20] + "-" + wellFormed[21:], true, headerMalformed},
		{"ok", "Bearer " + wellFormed, true, headerOK},
		{"ok lowercase scheme", "bearer " + wellFormed, true, headerOK},
		{"ok test env", "Bearer cg_test_" + wellFormed[8:], true, headerOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, got := ParseAuthorization(c.v, c.present)
			if got != c.want {
				t.Fatalf("problem = %d, want %d", got, c.want)
			}
			if got == headerOK && "Bearer "+tok != "Bearer "+c.v[7:] {
				t.Fatalf("token %q", tok)
			}
			if got != headerOK && tok != "" {
				t.Fatalf("token %q returned with a problem", tok)
			}
		})
	}
}

func TestNewKeyWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		for _, env := range []string{"live", "test"} {
			k, err := keystore.NewKey(env)
			if err != nil {
				t.Fatal(err)
			}
			if !keystore.WellFormed(k) || !strings.HasPrefix(k, "cg_"+env+"_") {
				t.Fatalf("NewKey(%s) = %q not well-formed", env, k)
			}
			if seen[k] {
				t.Fatal("duplicate key")
			}
			seen[k] = true
			if tok, p := ParseAuthorization("Bearer "+k, true); p != headerOK || tok != k {
				t.Fatalf("fresh key refused: %q", k)
			}
		}
	}
	if _, err := keystore.NewKey("prod"); err == nil {
		t.Fatal("NewKey accepted env prod")
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("Bearer "+wellFormed, true)
	f.Add("", false)
	f.Add("Bearer ", true)
	f.Add("Basic dXNlcjpwYXNz", true)
	f.Fuzz(func(t *testing.T, v string, present bool) {
		tok, p := ParseAuthorization(v, present)
		switch p {
		case headerOK:
			if !present || !keystore.WellFormed(tok) || !strings.EqualFold(v[:7], "bearer ") || v[7:] != tok {
				t.Fatalf("accepted %q as %q", v, tok)
			}
		case headerMissing:
			if present {
				t.Fatal("missing for a present header")
			}
		case headerMalformed:
			if tok != "" || !present {
				t.Fatalf("malformed with token %q", tok)
			}
		default:
			t.Fatalf("unknown problem %d", p)
		}
	})
}
