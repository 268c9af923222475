package tooldef

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The manifest is Apollo's persisted query manifest, the trusted-documents
// format graphql_guard reads (modules/gqlguard/persisted/README.md), so one
// file can be both the guard's allow-list and the tool list: the guard ignores
// the members it does not know. Each operation may add:
//
//	title        a display name for the tool
//	description  what the tool does, for the model (else the root fields' schema descriptions)
//	tool         false: not a tool (a query); true: a tool (required for a mutation; never a subscription)
//	arguments    {"<variable>": "<description>"}: describes an argument, over the schema's description
//
// Unlike the guard, an operation member this package does not know is an
// error: a misspelt "descripton" would otherwise silently drop what it holds.

// MaxManifestBytes bounds a manifest file (the guard's bound).
const MaxManifestBytes = 64 << 20

// FormatApollo is the only manifest format tools are read from: a plain
// id→body map has no operation names or types.
const FormatApollo = "apollo-persisted-query-manifest"

// ErrInvalidManifest is wrapped by every error about a manifest that does
// not load.
var ErrInvalidManifest = errors.New("invalid tool manifest")

// Entry is one operation of a manifest, as written.
type Entry struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Body        string            `json:"body"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Tool        *bool             `json:"tool,omitempty"`
	Arguments   map[string]string `json:"arguments,omitempty"`
}

// IsTool reports whether the entry becomes a tool: a query unless "tool" is
// false, a mutation only with "tool": true, a subscription never.
func (e *Entry) IsTool() bool {
	switch e.Type {
	case "query":
		return e.Tool == nil || *e.Tool
	case "mutation":
		return e.Tool != nil && *e.Tool
	}
	return false
}

// ReadManifestFile reads a manifest file (see ParseManifest).
func ReadManifestFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tooldef: manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tooldef: manifest: %w", err)
	}
	entries, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return entries, nil
}

// ParseManifest decodes a manifest and checks each entry on its own: an id
// that is the SHA-256 of the body (bare hex in either case, or
// sha256:<hex>), a name, a type, no unknown member, no "tool": true on a
// subscription. Errors name the entry by index, name and id, never by body.
func ParseManifest(data []byte) ([]Entry, error) {
	if len(data) > MaxManifestBytes {
		return nil, refuse("%d bytes over the %d-byte bound", len(data), MaxManifestBytes)
	}
	var top struct {
		Format     *string           `json:"format"`
		Version    json.RawMessage   `json:"version"`
		Operations []json.RawMessage `json:"operations"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, refuse("not a JSON object with an operations array: %v", err)
	}
	if top.Format == nil {
		return nil, refuse("no \"format\" member: tools need %q (a plain id→body map has no operation names)", FormatApollo)
	}
	if *top.Format != FormatApollo {
		return nil, refuse("unknown format %q (want %q)", clip(*top.Format), FormatApollo)
	}
	if string(top.Version) != "1" {
		return nil, refuse("unsupported version %s (want 1)", clip(string(top.Version)))
	}
	if top.Operations == nil {
		return nil, refuse("no \"operations\" member")
	}
	entries := make([]Entry, 0, len(top.Operations))
	for i, raw := range top.Operations {
		e, err := decodeEntry(raw)
		if err != nil {
			return nil, refuse("operations[%d]: %v", i, err)
		}
		if err := checkEntry(&e); err != nil {
			return nil, refuse("operations[%d] (%s): %v", i, e.who(), err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func decodeEntry(raw json.RawMessage) (Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var e Entry
	if err := dec.Decode(&e); err != nil {
		// encoding/json names an unknown member as `json: unknown field "x"`:
		// a member name, never a value.
		return Entry{}, err
	}
	return e, nil
}

func checkEntry(e *Entry) error {
	if e.Name == "" {
		return errors.New("no name (a tool is named after its operation)")
	}
	switch e.Type {
	case "query", "mutation":
	case "subscription":
		if e.Tool != nil && *e.Tool {
			return errors.New("a subscription cannot be a tool (a tool call has one answer)")
		}
	default:
		return fmt.Errorf("type %q is not query, mutation or subscription", clip(e.Type))
	}
	sum := sha256.Sum256([]byte(e.Body))
	want := hex.EncodeToString(sum[:])
	id := strings.TrimPrefix(e.ID, "sha256:")
	if !strings.EqualFold(id, want) {
		if len(id) != 64 {
			return errors.New("id is not a SHA-256 hash of the body (64 hexadecimal digits, or sha256:<hex>)")
		}
		return fmt.Errorf("the body's SHA-256 is %s, not the id", want)
	}
	return nil
}

// who names an entry in errors: its name and id, never its body.
func (e *Entry) who() string {
	return fmt.Sprintf("operation %q, id %q", clip(e.Name), clip(e.ID))
}

// clip bounds a string repeated in an error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("tooldef: manifest: "+format+": %w", append(args, ErrInvalidManifest)...)
}
