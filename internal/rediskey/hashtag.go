// Package rediskey builds the parts of Redis keys that every civicgate
// component writes the same way. It imports nothing but the standard
// library, so Caddy-free packages can use it.
package rediskey

import "strings"

// HashTag makes key safe inside a Redis hash tag ({…}, which decides a
// Cluster slot): a key with '{', '}' or '%' (or an empty one) is written as
// '%' and the key with those three percent-encoded — injective, and
// disjoint from the keys kept as they are (which hold no '%') — so a key
// can neither end the tag early nor leave it empty.
func HashTag(key string) string {
	if key != "" && !strings.ContainsAny(key, "{}%") {
		return key
	}
	var b strings.Builder
	b.WriteByte('%') // never empty; never equal to a key kept as is
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
