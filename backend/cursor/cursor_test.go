package cursor

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestRoundTripAndRefusals(t *testing.T) {
	c, err := New(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
	b := Binding("bills", map[string]any{"congress": 118})
	s := c.Encode(b, []string{"2024-01-02", "hr1-118"})
	if strings.ContainsAny(s, "+/=") {
		t.Fatalf("cursor not URL-safe: %q", s)
	}
	keys, err := c.Decode(s, b, 2)
	if err != nil || keys[0] != "2024-01-02" || keys[1] != "hr1-118" {
		t.Fatalf("Decode = %v, %v", keys, err)
	}
	other := Binding("bills", map[string]any{"congress": 117})
	if _, err := c.Decode(s, other, 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cursor reused with other filters: %v", err)
	}
	if _, err := c.Decode(s, Binding("members", map[string]any{"congress": 118}), 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cursor reused on other family: %v", err)
	}
	// Flip every character in turn: each tampered cursor must be refused.
	for i := range s {
		r := []byte(s)
		if r[i] == 'A' {
			r[i] = 'B'
		} else {
			r[i] = 'A'
		}
		if _, err := c.Decode(string(r), b, 2); err == nil {
			t.Fatalf("tampered cursor (byte %d) accepted", i)
		}
	}
	c2, _ := New([]byte("another-secret-another-secret-xx"))
	if _, err := c2.Decode(s, b, 2); !errors.Is(err, ErrInvalid) {
		t.Fatal("cursor signed with another secret accepted")
	}
	if _, err := c.Decode(s, b, 3); !errors.Is(err, ErrInvalid) {
		t.Fatal("wrong key count accepted")
	}
}

func FuzzDecode(f *testing.F) {
	c, _ := New(secret)
	b := Binding("bills", struct{}{})
	f.Add(c.Encode(b, []string{"2024-01-02", "hr1-118"}))
	f.Add("")
	f.Add("not-a-cursor")
	f.Add(strings.Repeat("A", 5000))
	f.Add("eyJrIjpbXX0")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := c.Decode(s, b, 2)
		if err == nil && len(keys) != 2 {
			t.Fatalf("accepted with %d keys", len(keys))
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error not ErrInvalid: %v", err)
		}
	})
}

// TestEncodeWritesWhatMarshalWrites: the payload Encode signs is, byte for
// byte, json.Marshal's, whether it is written by hand (plain ASCII) or
// marshalled (anything else), so cursors made before and after read alike.
func TestEncodeWritesWhatMarshalWrites(t *testing.T) {
	c, err := New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("az09-_:. \"\\<>&\u00e9\u2028\x01\x7f")
	str := func() string {
		r := make([]rune, rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	cases := []struct {
		binding string
		keys    []string
	}{
		{"b1", nil},
		{"b2", []string{}},
		{"AbC_-09", []string{"2024-01-02T00:00:00Z", "hr1234-118"}},
		{"x", []string{"Smith, John <Jr.> & Co"}},
	}
	for range 500 {
		keys := make([]string, rng.IntN(4))
		for i := range keys {
			keys[i] = str()
		}
		cases = append(cases, struct {
			binding string
			keys    []string
		}{str(), keys})
	}
	for _, tc := range cases {
		raw, err := base64.RawURLEncoding.DecodeString(c.Encode(tc.binding, tc.keys))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(payload{Keys: tc.keys, Filter: tc.binding})
		if got := raw[:len(raw)-sha256.Size]; string(got) != string(want) {
			t.Fatalf("keys %q binding %q: payload %s, json.Marshal %s", tc.keys, tc.binding, got, want)
		}
		if len(tc.keys) > 0 {
			back, err := c.Decode(c.Encode(tc.binding, tc.keys), tc.binding, len(tc.keys))
			if err != nil || !slices.Equal(back, tc.keys) {
				t.Fatalf("round trip of %q: %q %v", tc.keys, back, err)
			}
		}
	}
}
