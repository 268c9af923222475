package secretbox

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpenBindsAssociatedDataAndRotates(t *testing.T) {
	oldM := bytes.Repeat([]byte("o"), 32)
	newM := bytes.Repeat([]byte("n"), 40)
	oldBox, err := New(oldM)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := oldBox.Seal([]byte("whsec_x"), []byte("we_1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("whsec_x")) {
		t.Fatal("plaintext visible in the sealed value")
	}
	if p, err := oldBox.Open(sealed, []byte("we_1")); err != nil || string(p) != "whsec_x" {
		t.Fatalf("open: %q %v", p, err)
	}
	if _, err := oldBox.Open(sealed, []byte("we_2")); !errors.Is(err, ErrOpen) {
		t.Fatal("opened for another endpoint id")
	}
	// Rotation: the new box seals with the new key and still opens old values.
	rot, err := New(newM, oldM)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := rot.Open(sealed, []byte("we_1")); err != nil || string(p) != "whsec_x" {
		t.Fatalf("rotated box cannot open an old value: %v", err)
	}
	fresh, _ := rot.Seal([]byte("whsec_y"), []byte("we_1"))
	if _, err := oldBox.Open(fresh, []byte("we_1")); err == nil {
		t.Fatal("sealed with the old key after rotation")
	}
	// Same material as another use (the identity secret in Caddyfile.local)
	// gives a different key: the label separates them.
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("short material accepted")
	}
	if _, err := New(); err == nil {
		t.Fatal("no material accepted")
	}
}
