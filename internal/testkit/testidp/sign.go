package testidp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Sign is an access token (typ at+jwt, RFC 9068) of claims signed with k
// under its kid and k.Algorithm().
func Sign(k Key, claims map[string]any) string {
	header := map[string]any{"alg": k.Algorithm(), "typ": "at+jwt"}
	if k.KID != "" {
		header["kid"] = k.KID
	}
	return SignHeader(header, k, claims)
}

// SignHeader signs claims under header, both as JSON objects, by header's
// alg with key: a Key (its Signer signs), or whatever golang-jwt's signing
// method for that alg takes (a []byte secret for HS256: the alg-confusion
// forgeries). An alg of "none" in any letter case leaves the signature empty.
func SignHeader(header map[string]any, key any, claims map[string]any) string {
	alg, _ := header["alg"].(string)
	var method jwt.SigningMethod
	if !strings.EqualFold(alg, "none") {
		if method = jwt.GetSigningMethod(alg); method == nil {
			panic(fmt.Sprintf("testidp: no signing method for alg %q", alg))
		}
	}
	return SignRaw(mustJSON(header), mustJSON(claims), method, key)
}

// SignRaw signs header and payload, JSON texts used byte for byte (hostile
// tokens need JSON no encoder writes: duplicate members, a header alg that
// is not the signing one), with method and key (a Key or what method
// takes); method nil leaves the signature empty.
func SignRaw(header, payload string, method jwt.SigningMethod, key any) string {
	input := b64([]byte(header)) + "." + b64([]byte(payload))
	if method == nil {
		return input + "."
	}
	if k, ok := key.(Key); ok {
		key = k.Signer
	}
	sig, err := method.Sign(input, key)
	if err != nil {
		panic(fmt.Sprintf("testidp: sign %s with a %T: %v", method.Alg(), key, err))
	}
	return input + "." + b64(sig)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("testidp: " + err.Error())
	}
	return string(b)
}
