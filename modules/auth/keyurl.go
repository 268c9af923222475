package auth

import (
	"net/url"

	"github.com/civicgate/civicgate/modules/auth/keystore"
)

// keyInURL says which part of u holds something shaped like a key ("path" or
// "query", percent-encoded or not), or "" when none does. Without "cg_" and
// '%' in the URL it costs a scan of each part and never allocates.
func keyInURL(u *url.URL) string {
	switch {
	case keystore.ContainsKeyShape(u.RawQuery):
		return "query"
	case keystore.ContainsKeyShape(u.Path), keystore.ContainsKeyShape(u.RawPath), keystore.ContainsKeyShape(u.Opaque):
		return "path"
	}
	return ""
}
