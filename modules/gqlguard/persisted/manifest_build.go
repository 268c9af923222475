package persisted

import "strings"

// manifestBuilder checks entries one by one and fills a Manifest.
type manifestBuilder struct {
	m       *Manifest
	hashIDs map[Hash]struct{} // hashes given as ids (sha256:<hex> or bare hex)
}

func newManifestBuilder(format string) *manifestBuilder {
	return &manifestBuilder{
		m:       &Manifest{format: format, byHash: make(map[Hash]string), byID: make(map[string]string)},
		hashIDs: make(map[Hash]struct{}),
	}
}

// addApollo adds operations[i]: its id must be a SHA-256 of its body.
func (b *manifestBuilder) addApollo(i int, op apolloOperation) error {
	who := describeEntry(op.ID, op.Name)
	if op.ID == "" {
		return refuse("operations[%d] (%s): no id", i, who)
	}
	switch op.Type {
	case "query", "mutation", "subscription":
	default:
		return refuse("operations[%d] (%s): type %q is not query, mutation or subscription", i, who, clip(op.Type))
	}
	h, isHash, err := parseEntryID(op.ID)
	if err != nil {
		return refuse("operations[%d] (%s): %v", i, who, err)
	}
	if !isHash {
		return refuse("operations[%d] (%s): id is not a SHA-256 hash (custom ids are accepted only in a plain id→body map)", i, who)
	}
	if err := b.addHashID(h, op.Body); err != nil {
		return refuse("operations[%d] (%s): %v", i, who, err)
	}
	return nil
}

// addPlain adds one "<id>": "<body>" member of a plain map.
func (b *manifestBuilder) addPlain(id, body string) error {
	who := describeEntry(id, "")
	if id == "" {
		return refuse("an empty id")
	}
	h, isHash, err := parseEntryID(id)
	if err != nil {
		return refuse("%s: %v", who, err)
	}
	if isHash {
		if err := b.addHashID(h, body); err != nil {
			return refuse("%s: %v", who, err)
		}
		return nil
	}
	if blankDocument(body) {
		return refuse("%s: empty body", who)
	}
	if prev, dup := b.m.byID[id]; dup {
		if prev != body {
			return refuse("%s: given twice with different bodies", who)
		}
		return nil
	}
	b.m.byID[id] = body
	b.m.byHash[Sum(body)] = body
	b.m.ids++
	return nil
}

// entryError is a reason without the "manifest:" prefix, wrapped by the caller.
type entryError string

func (e entryError) Error() string { return string(e) }

func (b *manifestBuilder) addHashID(h Hash, body string) error {
	if blankDocument(body) {
		return entryError("empty body")
	}
	if _, dup := b.hashIDs[h]; dup {
		if b.m.byHash[h] != body {
			return entryError("given twice with different bodies")
		}
		return nil
	}
	if sum := Sum(body); sum != h {
		return entryError("the body's SHA-256 is " + sum.String() + ", not the id")
	}
	b.hashIDs[h] = struct{}{}
	b.m.byHash[h] = body
	b.m.ids++
	return nil
}

// parseEntryID classifies a manifest id: "sha256:<hex>" and bare 64 hex are
// hashes; "sha256:" followed by anything else is an error; the rest are custom.
func parseEntryID(id string) (h Hash, isHash bool, err error) {
	if rest, ok := strings.CutPrefix(id, DocumentIDPrefix); ok {
		h, err := ParseHash(rest)
		if err != nil {
			return Hash{}, false, entryError("the sha256: prefix is not followed by 64 hexadecimal characters")
		}
		return h, true, nil
	}
	if looksLikeHash(id) {
		h, err := ParseHash(id)
		return h, err == nil, err
	}
	return Hash{}, false, nil
}

// describeEntry names an entry for an error: its operation name when it has
// one, and its id (both clipped), never its body.
func describeEntry(id, name string) string {
	if name != "" {
		return "operation " + quote(name) + ", id " + quote(id)
	}
	return "id " + quote(id)
}

// blankDocument reports whether body holds only GraphQL ignored tokens:
// white space, line terminators, commas, a byte order mark and comments.
func blankDocument(body string) bool {
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t', '\n', '\r', ',':
		case '#':
			for i < len(body) && body[i] != '\n' && body[i] != '\r' {
				i++
			}
		default:
			if strings.HasPrefix(body[i:], "\uFEFF") {
				i += len("\uFEFF") - 1
				continue
			}
			return false
		}
	}
	return true
}
