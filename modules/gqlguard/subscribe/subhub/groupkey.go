package subhub

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// groupKey is what makes two subscriptions identical within a dedup scope:
// the document's SHA-256, the operation name and the variables in canonical
// form (object members sorted, numbers as written). Extensions are not part
// of it: the guard has already resolved a persisted document to its text.
func groupKey(scope string, payload []byte) (string, error) {
	var p struct {
		Query         string          `json:"query"`
		OperationName string          `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", fmt.Errorf("subhub: reading the subscribe payload: %w", err)
	}
	vars, err := canonicalJSON(p.Variables)
	if err != nil {
		return "", err
	}
	doc := sha256.Sum256([]byte(p.Query))
	var b bytes.Buffer
	b.Grow(len(scope) + 64 + len(p.OperationName) + len(vars) + 3)
	b.WriteString(scope)
	b.WriteByte(0)
	b.WriteString(hex.EncodeToString(doc[:]))
	b.WriteByte(0)
	b.WriteString(p.OperationName)
	b.WriteByte(0)
	b.Write(vars)
	return b.String(), nil
}

// canonicalJSON re-encodes raw with object members sorted (encoding/json
// sorts map keys) and numbers kept as written; null and absent are the same.
func canonicalJSON(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("subhub: reading the variables: %w", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("subhub: encoding the variables: %w", err)
	}
	return out, nil
}
