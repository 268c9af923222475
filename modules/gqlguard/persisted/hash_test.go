package persisted_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// sha256("{ __typename }"), computed independently (sha256sum).
const typenameHex = "7f56e67dd21ab3f30d1ff8b7bed08893f0a0db86449836189b361dd1e56ddb4b"

func TestSumAndString(t *testing.T) {
	h := persisted.Sum("{ __typename }")
	if got := h.String(); got != typenameHex {
		t.Fatalf("Sum(...).String() = %s, want %s", got, typenameHex)
	}
}

func TestParseHash(t *testing.T) {
	for _, s := range []string{typenameHex, strings.ToUpper(typenameHex)} {
		h, err := persisted.ParseHash(s)
		if err != nil || h.String() != typenameHex {
			t.Fatalf("ParseHash(%q) = %s, %v", s, h, err)
		}
	}
	long := strings.Repeat("a", 65) + strings.Repeat("x", 200)
	for _, tc := range []struct{ in, want string }{
		{"", `persisted: hash "" has 0 characters, want 64 hexadecimal: not a SHA-256 hash`},
		{typenameHex[:63], `persisted: hash "` + typenameHex[:63] + `" has 63 characters, want 64 hexadecimal: not a SHA-256 hash`},
		{typenameHex[:63] + "g", `persisted: hash "` + typenameHex[:63] + `g" is not hexadecimal: not a SHA-256 hash`},
		{"sha256:" + typenameHex[7:], `persisted: hash "sha256:` + typenameHex[7:] + `" is not hexadecimal: not a SHA-256 hash`},
		{long, `persisted: hash "` + long[:80] + `…" has 265 characters, want 64 hexadecimal: not a SHA-256 hash`},
		{typenameHex[:62] + "é", `persisted: hash "` + typenameHex[:62] + `é" is not hexadecimal: not a SHA-256 hash`},
	} {
		_, err := persisted.ParseHash(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseHash(%.20q…) error = %v\nwant %s", tc.in, err, tc.want)
		}
		if !errors.Is(err, persisted.ErrBadHash) {
			t.Errorf("ParseHash(%.20q…) error does not wrap ErrBadHash", tc.in)
		}
	}
}

func TestParseHashAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = persisted.ParseHash(typenameHex) }); n != 0 {
		t.Fatalf("ParseHash allocates %v times", n)
	}
}

func TestParseDocumentID(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"sha256:" + typenameHex, true},
		{"sha256:" + strings.ToUpper(typenameHex), true},
		{typenameHex, false},                   // bare hex is not a document id
		{"SHA256:" + typenameHex, false},       // the prefix is lowercase
		{"sha256:" + typenameHex + "0", false}, // 65 hex
		{"sha256:" + typenameHex[:63], false},  // 63 hex
		{"sha256: " + typenameHex[1:], false},  // a space
		{"md5:d41d8cd98f00b204e9800998ecf8427e", false},
		{"sha256:", false},
		{"", false},
	} {
		h, ok := persisted.ParseDocumentID(tc.in)
		if ok != tc.ok {
			t.Errorf("ParseDocumentID(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
		if ok && h.String() != typenameHex {
			t.Errorf("ParseDocumentID(%q) = %s", tc.in, h)
		}
	}
}
