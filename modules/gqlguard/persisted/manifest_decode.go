package persisted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrInvalidManifest is wrapped by every error ParseManifest and
// LoadManifest return for a file they refuse.
var ErrInvalidManifest = errors.New("invalid trusted-documents manifest")

// ParseManifest verifies and loads a trusted-documents file's content: an
// Apollo persisted query manifest or a plain {"<id>": "<body>"} map (see
// README.md). Errors name the offending entry's id or operation name, never
// its body.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, refuse("%d bytes over the %d-byte bound", len(data), MaxManifestBytes)
	}
	fields, err := readTopObject(data)
	if err != nil {
		return nil, err
	}
	if isApolloShape(fields) {
		return decodeApollo(fields)
	}
	return decodePlainMap(fields)
}

// topField is one member of the manifest's top-level object.
type topField struct {
	key    string
	value  json.RawMessage
	offset int64 // of the value, in the file
}

// readTopObject reads the top-level object's members in file order (keys may
// repeat) and refuses anything after it.
func readTopObject(data []byte) ([]topField, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, refuse("the file is empty")
	}
	if err != nil {
		return nil, jsonError(err, dec)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, refuse("want a JSON object at byte offset 0")
	}
	var fields []topField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err, dec)
		}
		key, _ := tok.(string) // inside an object the decoder yields string keys
		offset := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError(err, dec)
		}
		fields = append(fields, topField{key: key, value: raw, offset: offset})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, jsonError(err, dec)
	}
	end := dec.InputOffset()
	rest := bytes.TrimLeft(data[end:], " \t\r\n")
	if len(rest) > 0 {
		return nil, refuse("invalid JSON at byte offset %d: data after the top-level object", int(end)+len(data[end:])-len(rest))
	}
	return fields, nil
}

// isApolloShape: a "format" member, or any member whose value is not a
// string, means a structured manifest (a plain map has only string values).
func isApolloShape(fields []topField) bool {
	for _, f := range fields {
		if f.key == "format" || !isJSONString(f.value) {
			return true
		}
	}
	return false
}

// apolloOperation is one entry of an Apollo manifest's operations array.
type apolloOperation struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Body string `json:"body"`
}

func decodeApollo(fields []topField) (*Manifest, error) {
	members := make(map[string]topField, len(fields))
	for _, f := range fields {
		if _, dup := members[f.key]; dup {
			return nil, refuse("top-level member %q given twice", clip(f.key))
		}
		members[f.key] = f
	}
	format, ok := members["format"]
	if !ok {
		return nil, refuse("no \"format\" member, and the value of %q is not a string (not a plain id→body map)", clip(firstNonString(fields)))
	}
	var name string
	if err := json.Unmarshal(format.value, &name); err != nil || name != FormatApollo {
		if !isFormatName(name) { // perhaps a document under the id "format": never echo it
			return nil, refuse("unknown format (want %q; a plain map cannot use the id \"format\")", FormatApollo)
		}
		return nil, refuse("unknown format %q (want %q)", name, FormatApollo)
	}
	version, ok := members["version"]
	if !ok {
		return nil, refuse("no \"version\" member")
	}
	if string(version.value) != "1" {
		return nil, refuse("unsupported version %s (want 1)", clip(string(version.value)))
	}
	ops, ok := members["operations"]
	if !ok {
		return nil, refuse("no \"operations\" member")
	}
	b := newManifestBuilder(FormatApollo)
	dec := json.NewDecoder(bytes.NewReader(ops.value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, refuse("\"operations\" at byte offset %d is not an array", ops.offset)
	}
	for i := 0; dec.More(); i++ {
		start := ops.offset + dec.InputOffset()
		var op apolloOperation
		if err := dec.Decode(&op); err != nil {
			return nil, refuse("operations[%d] at byte offset %d: %v", i, start, err)
		}
		if err := b.addApollo(i, op); err != nil {
			return nil, err
		}
	}
	return b.m, nil
}

func decodePlainMap(fields []topField) (*Manifest, error) {
	b := newManifestBuilder(FormatPlainMap)
	for _, f := range fields {
		var body string
		if err := json.Unmarshal(f.value, &body); err != nil { // isApolloShape saw a string
			return nil, refuse("id %q at byte offset %d: %v", clip(f.key), f.offset, err)
		}
		if err := b.addPlain(f.key, body); err != nil {
			return nil, err
		}
	}
	return b.m, nil
}

// isFormatName reports whether s looks like a format name (safe to repeat).
func isFormatName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func isJSONString(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '"'
}

func firstNonString(fields []topField) string {
	for _, f := range fields {
		if !isJSONString(f.value) {
			return f.key
		}
	}
	return ""
}

// jsonError reports a decoding error with its byte offset.
func jsonError(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return refuse("invalid JSON at byte offset %d: %v", se.Offset, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return refuse("invalid JSON at byte offset %d: unexpected end of file", dec.InputOffset())
	}
	return refuse("invalid JSON at byte offset %d: %v", dec.InputOffset(), err)
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("persisted: manifest: "+format+": %w", append(args, ErrInvalidManifest)...)
}
