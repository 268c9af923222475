package accesstoken

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// The strict reading of a token, before and beside golang-jwt's: what it
// does not check — a member named twice, crit, typ and cty, a claim of the
// wrong JSON type, a NumericDate out of range, invalid UTF-8 — is refused
// here.

var segment = base64.RawURLEncoding.Strict()

// header is what the token's JOSE header says that is used. jku, x5u, jwk
// and x5c are never read: keys come from the configured set only.
type header struct {
	alg    string
	kid    string
	hasKid bool
}

// parseHeader splits a compact JWS and reads its header; algs are the
// accepted algorithms.
func parseHeader(token string, algs []string) (header, *Error) {
	var h header
	seg, rest, ok := strings.Cut(token, ".")
	if !ok || seg == "" || strings.Count(rest, ".") != 1 {
		return h, refusal(Malformed) // not three segments (a JWE has five)
	}
	raw, err := segment.DecodeString(seg)
	if err != nil {
		return h, refusal(Malformed)
	}
	m, err := decodeObject(raw)
	if err != nil {
		return h, refusal(Malformed)
	}
	if _, ok := m["crit"]; ok {
		return h, refusal(Malformed) // RFC 7515 §4.1.11: no extension is understood here
	}
	alg, present, ok := stringMember(m, "alg")
	if !present || !ok {
		return h, refusal(Malformed)
	}
	if !slices.Contains(algs, alg) {
		return h, refusal(DisallowedAlgorithm)
	}
	if typ, present, ok := stringMember(m, "typ"); present {
		if !ok {
			return h, refusal(Malformed)
		}
		switch strings.TrimPrefix(strings.ToLower(typ), "application/") {
		case "at+jwt", "jwt": // RFC 9068 §2.1; most providers still write JWT
		default:
			return h, refusal(NotAnAccessToken)
		}
	}
	if _, ok := m["cty"]; ok {
		return h, refusal(NotAnAccessToken) // a nested JWT, or not claims at all
	}
	if h.kid, h.hasKid, ok = stringMember(m, "kid"); !ok {
		return h, refusal(Malformed)
	}
	h.alg = alg
	return h, nil
}

var errDuplicate = errors.New("member named twice")

// decodeObject reads one JSON object, with nothing after it, into its
// members' raw values, refusing invalid UTF-8 and a member named twice
// (encoding/json would keep the last; another reader may take the first).
func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		if _, dup := m[name]; dup {
			return nil, errDuplicate
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return m, nil
}

// stringMember reads m[name]: present reports whether it is there, ok
// whether it is absent or a JSON string.
func stringMember(m map[string]json.RawMessage, name string) (s string, present, ok bool) {
	raw, present := m[name]
	if !present {
		return "", false, true
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", true, false
	}
	return s, true, true
}

// stringsMember reads a member that is a string or an array of strings
// (aud, scp); split splits a string at spaces (scp as Entra ID writes it).
func stringsMember(m map[string]json.RawMessage, name string, split bool) (v []string, present, ok bool) {
	raw, present := m[name]
	if !present {
		return nil, false, true
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, true, false
		}
		if split {
			return strings.Fields(s), true, true
		}
		return []string{s}, true, true
	}
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &v) != nil {
		return nil, true, false // not an array of strings (null included)
	}
	return v, true, true
}

// maxNumericDate is 9999-12-31T23:59:59Z: a NumericDate beyond it, or
// negative, is not a date a token means.
const maxNumericDate = 253402300799

// dateMember reads a NumericDate: a JSON number (a fraction allowed, RFC
// 7519 §2), never a string, from 0 to maxNumericDate.
func dateMember(m map[string]json.RawMessage, name string) (d *jwt.NumericDate, ok bool) {
	raw, present := m[name]
	if !present {
		return nil, true
	}
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > maxNumericDate || math.IsNaN(f) {
		return nil, false
	}
	sec, frac := math.Modf(f)
	return jwt.NewNumericDate(time.Unix(int64(sec), int64(frac*1e9))), true
}

// claimNames are the configured claims read besides the registered ones.
type claimNames struct {
	tier, org, subject string
}

// claims is a token's payload as the checks need it. golang-jwt decodes it
// through UnmarshalJSON and validates it through the jwt.Claims methods.
type claims struct {
	names *claimNames

	iss, sub, jti string
	aud           []string
	exp, nbf, iat *jwt.NumericDate
	scopes        []string
	hasScope      bool // scope or scp present
	idToken       bool // a member only ID tokens carry (docs/identity.md)

	subject, org         string
	tier                 string
	tierPresent, tierStr bool
}

// UnmarshalJSON reads the payload strictly; its error is an *Error.
func (c *claims) UnmarshalJSON(data []byte) error {
	m, err := decodeObject(data)
	if err != nil {
		return refusal(Malformed)
	}
	okAll := true
	str := func(name string) string {
		s, _, ok := stringMember(m, name)
		okAll = okAll && ok
		return s
	}
	date := func(name string) *jwt.NumericDate {
		d, ok := dateMember(m, name)
		okAll = okAll && ok
		return d
	}
	c.iss, c.sub, c.jti = str("iss"), str("sub"), str("jti")
	c.exp, c.nbf, c.iat = date("exp"), date("nbf"), date("iat")
	aud, _, ok := stringsMember(m, "aud", false)
	c.aud, okAll = aud, okAll && ok
	scope, hasScope, ok := stringsMember(m, "scope", true) // a string (RFC 8693 §4.2); some servers write an array
	okAll = okAll && ok
	scp, hasScp, ok := stringsMember(m, "scp", true)
	okAll = okAll && ok
	if !okAll {
		return refusal(Malformed)
	}
	c.hasScope = hasScope || hasScp
	c.scopes = scopeSet(scope, scp)
	c.idToken = isIDToken(m, c.hasScope)

	c.subject, _, _ = stringMember(m, c.names.subject)
	c.org, _, _ = stringMember(m, c.names.org)
	if c.names.tier != "" {
		raw, present := m[c.names.tier]
		c.tierPresent = present && string(raw) != "null"
		c.tier, _, c.tierStr = stringMember(m, c.names.tier)
	}
	return nil
}

// isIDToken reports whether the payload is an ID token's: at_hash or c_hash
// (hashes of the tokens issued beside an ID token; an access token cannot
// carry its own), a nonce without any scope, or Keycloak's typ claim saying
// ID, Refresh, Offline or Logout.
func isIDToken(m map[string]json.RawMessage, hasScope bool) bool {
	if _, ok := m["at_hash"]; ok {
		return true
	}
	if _, ok := m["c_hash"]; ok {
		return true
	}
	if _, ok := m["nonce"]; ok && !hasScope {
		return true
	}
	typ, _, _ := stringMember(m, "typ")
	switch strings.ToLower(typ) {
	case "id", "refresh", "offline", "logout":
		return true
	}
	return false
}

// scopeSet is the token's scopes: scope's, then scp's, each once (a set,
// not a scan of the list per scope: a token may list thousands).
func scopeSet(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.exp, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.iat, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.nbf, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.iss, nil }
func (c *claims) GetSubject() (string, error)                  { return c.sub, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return c.aud, nil }
