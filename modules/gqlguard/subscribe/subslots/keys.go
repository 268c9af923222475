package subslots

import "github.com/civicgate/civicgate/internal/rediskey"

// setKey is the sorted set of one API key's leases:
// <prefix>subs:{<key>} — hash-tagged, so each key's set lives on one Cluster
// slot and every script touches one key.
func setKey(prefix, key string) string {
	return prefix + "subs:{" + rediskey.HashTag(key) + "}"
}
