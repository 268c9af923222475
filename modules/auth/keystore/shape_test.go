package keystore_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

const secret = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefg" // SecretLen base62 characters

// encodeAll percent-encodes every byte of s with the given hex case.
func encodeAll(s string, upper bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if upper {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			fmt.Fprintf(&b, "%%%02x", s[i])
		}
	}
	return b.String()
}

func TestContainsKeyShape(t *testing.T) {
	key := "cg_live_" + secret
	if !keystore.WellFormed(key) || len(secret) != keystore.SecretLen {
		t.Fatal("fixture is not a key")
	}
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{"/bills?limit=2", false},
		{"/bills?limit=2&access_token=" + key, true},
		{"api_key=cg_test_" + secret, true},
		{"/v1/" + key + "/x", true},
		{"access_token=cg%5Flive%5F" + secret, true},
		{"access_token=cg%5flive%5f" + secret, true},
		{"access_token=" + encodeAll(key, true), true},
		{"access_token=" + encodeAll(key, false), true},
		{"access_token=%63g_live_" + encodeAll(secret[:20], true) + secret[20:], true},
		{"cg_live_" + secret[:keystore.ShapeMinSecret], true},    // a fragment still leaks most of a key
		{"cg_live_" + secret[:keystore.ShapeMinSecret-1], false}, // too short to matter
		{"cg_live_" + secret[:4], false},                         // a displayed key prefix
		{"cg_live_REDACTED", false},                              // redacted output
		{"cg_prod_" + secret, false},                             // not an environment
		{"CG_LIVE_" + secret, false},                             // keys are case-sensitive
		{"cg-live-" + secret, false},                             // not the separator
		{"cg_live_" + secret[:10] + "-" + secret[10:20], false},  // run broken below the minimum
		{"cg%255Flive%255F" + secret, false},                     // double encoding is one level too deep
		{"%", false}, {"%5", false}, {"cg_", false}, {"cg_live_", false},
	} {
		if got := keystore.ContainsKeyShape(c.s); got != c.want {
			t.Errorf("ContainsKeyShape(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestRedactKeys(t *testing.T) {
	key := "cg_live_" + secret
	for _, c := range []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{`{"uri":"/bills?access_token=` + key + `&limit=2"}`, `{"uri":"/bills?access_token=cg_live_REDACTED&limit=2"}`},
		{"a cg_test_" + secret + " b " + key, "a cg_test_REDACTED b cg_live_REDACTED"},
		{"q=cg%5Flive%5F" + secret, "q=cg%5Flive%5FREDACTED"},
		{"q=cg%5flive%5f" + secret + "%26x", "q=cg%5flive%5fREDACTED%26x"},
		{key + key, "cg_live_REDACTEDcg_live_REDACTED"},                               // back to back
		{"cg_live_" + secret[:16] + "%6" + key, "cg_live_REDACTED%6cg_live_REDACTED"}, // a prefix inside %6c
		{"prefix cg_live_H0SQ shown", "prefix cg_live_H0SQ shown"},
		{"cg_live_REDACTED", "cg_live_REDACTED"},
	} {
		got := string(keystore.RedactKeys([]byte(c.in)))
		if got != c.want {
			t.Errorf("RedactKeys(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestShapeDoesNotAllocate(t *testing.T) {
	plain := "/v1/graphql?limit=25&cursor=abc"
	encoded := "/bills?q=H.R.%202882&access_token=cg%5Flive%5F" + secret
	line := []byte(`{"level":"info","msg":"handled request","uri":"/bills?q=a%20b"}`)
	if n := testing.AllocsPerRun(100, func() {
		_ = keystore.ContainsKeyShape(plain)
		_ = keystore.ContainsKeyShape(encoded)
		_ = keystore.RedactKeys(line)
	}); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
}

// keyRE is the literal key shape, written independently of the scanner.
var keyRE = regexp.MustCompile(`cg_(live|test)_[0-9A-Za-z]{16}`)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// FuzzContainsKeyShape embeds a key (its secret from seed, some of its bytes
// percent-encoded as chosen by mask) between arbitrary text: it must always be
// found, and no ShapeMinSecret characters of its secret may survive
// redaction. On arbitrary text the redactor must leave nothing key-shaped,
// change exactly what is key-shaped, and be idempotent.
func FuzzContainsKeyShape(f *testing.F) {
	f.Add("/bills?access_token=", "&limit=2", []byte{}, uint64(0), false)
	f.Add("cg_live_AAAAAAAAAAAAAAAA%6", "", []byte("x"), uint64(0), true)
	f.Add("q=", "%26", []byte("seed"), uint64(0b1011), true)
	f.Add("cg_test_", "_live_"+secret, []byte{12, 16}, ^uint64(0), false)
	f.Add("%", "%5", []byte{0, 1, 2}, uint64(1<<3|1<<7), false)
	f.Fuzz(func(t *testing.T, before, after string, seed []byte, mask uint64, lower bool) {
		for _, s := range []string{before, after, before + after} {
			red := string(keystore.RedactKeys([]byte(s)))
			if keystore.ContainsKeyShape(red) {
				t.Fatalf("RedactKeys(%q) = %q is still key-shaped", s, red)
			}
			if has := keystore.ContainsKeyShape(s); has != (red != s) {
				t.Fatalf("ContainsKeyShape(%q) = %v but RedactKeys gave %q", s, has, red)
			}
			if again := string(keystore.RedactKeys([]byte(red))); again != red {
				t.Fatalf("not idempotent: %q → %q → %q", s, red, again)
			}
			// Independent oracles, where the scanner's run-splitting at a
			// second prefix cannot apply.
			if keyRE.MatchString(s) && strings.Count(s, "cg_") == 1 && !strings.Contains(s, "%") && !keystore.ContainsKeyShape(s) {
				t.Fatalf("literal key shape in %q not found", s)
			}
			if dec, err := url.PathUnescape(s); err == nil && keystore.WellFormed(dec) && !keystore.ContainsKeyShape(s) {
				t.Fatalf("percent-encoded key %q not found", s)
			}
		}

		sec := []byte(secret)
		for i := range sec {
			if len(seed) > 0 {
				sec[i] = base62[int(seed[i%len(seed)]+byte(i))%len(base62)]
			}
		}
		units := make([]string, 0, 8+len(sec)) // the key, one written character each
		for i, c := range append([]byte("cg_live_"), sec...) {
			switch {
			case mask>>(i%64)&1 == 0:
				units = append(units, string(c))
			case lower:
				units = append(units, fmt.Sprintf("%%%02x", c))
			default:
				units = append(units, fmt.Sprintf("%%%02X", c))
			}
		}
		s := before + strings.Join(units, "") + after
		if !keystore.ContainsKeyShape(s) {
			t.Fatalf("key not found in %q", s)
		}
		red := string(keystore.RedactKeys([]byte(s)))
		if keystore.ContainsKeyShape(red) {
			t.Fatalf("RedactKeys(%q) = %q is still key-shaped", s, red)
		}
		secretUnits := units[8:]
		for k := 0; k+keystore.ShapeMinSecret <= len(secretUnits); k++ {
			frag := strings.Join(secretUnits[k:k+keystore.ShapeMinSecret], "")
			if strings.Contains(red, frag) && !strings.Contains(before+after, frag) {
				t.Fatalf("secret characters %q survived: %q → %q", frag, s, red)
			}
		}
	})
}
