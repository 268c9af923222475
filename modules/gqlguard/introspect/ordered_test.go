package introspect_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// An ordered JSON tree: objects keep their members' order, so two answers
// compare with the order of their members, not only their content.

type member struct {
	key   string
	value any
}

type object []member

func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o object
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// encodeOrdered writes the tree back as compact JSON, members in order.
func encodeOrdered(v any) []byte {
	var buf bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch t := v.(type) {
		case object:
			buf.WriteByte('{')
			for i, m := range t {
				if i > 0 {
					buf.WriteByte(',')
				}
				k, _ := json.Marshal(m.key)
				buf.Write(k)
				buf.WriteByte(':')
				enc(m.value)
			}
			buf.WriteByte('}')
		case []any:
			buf.WriteByte('[')
			for i, e := range t {
				if i > 0 {
					buf.WriteByte(',')
				}
				enc(e)
			}
			buf.WriteByte(']')
		default:
			b, _ := json.Marshal(t)
			buf.Write(b)
		}
	}
	enc(v)
	return buf.Bytes()
}

// firstDifference is where a and b part, with some context.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("at byte %d:\n  ours:   …%s…\n  engine: …%s…", i, a[from:min(len(a), i+200)], b[from:min(len(b), i+200)])
}
