package persisted

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxManifestBytes bounds a trusted-documents file.
const MaxManifestBytes = 64 << 20

// Manifest formats, as Format reports them.
const (
	FormatApollo   = "apollo-persisted-query-manifest"
	FormatPlainMap = "plain-map"
)

// Manifest is a loaded trusted-documents file: an allow-list of exact
// document texts, each reachable by its SHA-256 and, in the plain-map format,
// by a custom id. It is immutable once loaded and safe for concurrent use.
type Manifest struct {
	format string
	byHash map[Hash]string   // every trusted body, by Sum(body)
	byID   map[string]string // custom (non-sha256) ids, verbatim
	ids    int               // distinct ids accepted
}

// LoadManifest reads and verifies a trusted-documents file (see ParseManifest).
func LoadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("persisted: manifest: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxManifestBytes {
		return nil, refuse("file %s: %d bytes over the %d-byte bound", path, st.Size(), MaxManifestBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("persisted: manifest: %w", err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return m, nil
}

// ByHash returns the trusted document whose SHA-256 is h. It allocates
// nothing.
func (m *Manifest) ByHash(h Hash) (string, bool) {
	body, ok := m.byHash[h]
	return body, ok
}

// ByID returns the trusted document with id: "sha256:<hex>", bare 64 hex
// (either case), or a custom id from a plain-map manifest, looked up verbatim.
func (m *Manifest) ByID(id string) (string, bool) {
	if strings.HasPrefix(id, DocumentIDPrefix) {
		h, ok := ParseDocumentID(id)
		if !ok {
			return "", false
		}
		return m.ByHash(h)
	}
	if looksLikeHash(id) {
		h, err := ParseHash(id)
		if err != nil {
			return "", false
		}
		return m.ByHash(h)
	}
	body, ok := m.byID[id]
	return body, ok
}

// Contains reports whether query is, byte for byte, a trusted document.
func (m *Manifest) Contains(query string) bool {
	_, ok := m.byHash[Sum(query)]
	return ok
}

// Len is the number of distinct ids the manifest holds.
func (m *Manifest) Len() int { return m.ids }

// Documents is the number of distinct document texts.
func (m *Manifest) Documents() int { return len(m.byHash) }

// Format is FormatApollo or FormatPlainMap.
func (m *Manifest) Format() string { return m.format }
