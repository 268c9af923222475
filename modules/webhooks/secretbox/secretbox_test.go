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

func TestOpenIndexSaysWhichKeyOpened(t *testing.T) {
	oldM := bytes.Repeat([]byte("o"), 32)
	newM := bytes.Repeat([]byte("n"), 32)
	oldBox, _ := New(oldM)
	rot, err := New(newM, oldM)
	if err != nil {
		t.Fatal(err)
	}
	sealedOld, _ := oldBox.Seal([]byte("s"), []byte("ad"))
	sealedNew, _ := rot.Seal([]byte("s"), []byte("ad"))
	if _, i, err := rot.OpenIndex(sealedOld, []byte("ad")); err != nil || i != 1 {
		t.Fatalf("old value: key %d, %v", i, err)
	}
	if _, i, err := rot.OpenIndex(sealedNew, []byte("ad")); err != nil || i != 0 {
		t.Fatalf("new value: key %d, %v", i, err)
	}
	for _, bad := range [][]byte{nil, sealedNew[:10], append(bytes.Clone(sealedNew[:len(sealedNew)-1]), sealedNew[len(sealedNew)-1]^1)} {
		if _, _, err := rot.OpenIndex(bad, []byte("ad")); !errors.Is(err, ErrOpen) {
			t.Fatalf("%x opened: %v", bad, err)
		}
	}
}
