package subslots

import "strings"

// setKey is the sorted set of one API key's leases:
// <prefix>subs:{<key>} — hash-tagged, so each key's set lives on one Cluster
// slot and every script touches one key.
func setKey(prefix, key string) string {
	return prefix + "subs:{" + hashTag(key) + "}"
}

// hashTag makes key safe inside a Redis hash tag, as civic_rate_limit does
// (modules/ratelimit/policy.go): a key with '{', '}' or '%' (or an empty
// one) is written as '%' and the key with those three percent-encoded —
// injective, and disjoint from the keys kept as they are — so a key can
// neither end the tag early nor leave it empty.
func hashTag(key string) string {
	if key != "" && !strings.ContainsAny(key, "{}%") {
		return key
	}
	var b strings.Builder
	b.WriteByte('%')
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
