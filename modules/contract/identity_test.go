package contract

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func TestSignVerifyRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok, err := SignIdentity(testSecret, Caller{KeyID: "key_1", Org: "acme", Tier: "enterprise", Env: "live", Families: []string{"bills", "members"}}, now, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := VerifyIdentity(testSecret, tok, now.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if c.KeyID() != "key_1" || c.Org != "acme" || c.Tier != "enterprise" || c.Env != "live" || !c.Entitled("bills") || !c.Entitled("members") || c.Entitled("changes") {
		t.Fatalf("claims = %+v", c)
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good, err := SignIdentity(testSecret, Caller{KeyID: "key_1", Org: "acme", Tier: "free", Env: "live"}, now, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	long, err := jwt.NewWithClaims(jwt.SigningMethodHS256, Claims{Org: "acme", RegisteredClaims: jwt.RegisteredClaims{
		Issuer: IdentityIssuer, Subject: "k", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}}).SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: IdentityIssuer, Subject: "k", IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Second)),
	}}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		token string
		at    time.Time
		key   []byte
	}{
		"expired":   {good, now.Add(31 * time.Second), testSecret},
		"forged":    {good, now, []byte("ffffffffffffffffffffffffffffffff")},
		"tampered":  {good[:len(good)-2] + "xx", now, testSecret},
		"garbage":   {"not-a-jwt", now, testSecret},
		"empty":     {"", now, testSecret},
		"lifetime":  {long, now, testSecret},
		"alg none":  {none, now, testSecret},
		"truncated": {strings.SplitN(good, ".", 2)[0], now, testSecret},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := VerifyIdentity(tc.key, tc.token, tc.at); !errors.Is(err, ErrInvalidIdentity) {
				t.Fatalf("Verify = %v, want ErrInvalidIdentity", err)
			}
		})
	}
}

func TestSignRefusesShortSecretAndLongTTL(t *testing.T) {
	now := time.Now()
	if _, err := SignIdentity([]byte("short"), Caller{KeyID: "k", Org: "o", Tier: "t", Env: "live"}, now, time.Second); !errors.Is(err, ErrSecretTooShort) {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := SignIdentity(testSecret, Caller{KeyID: "k", Org: "o", Tier: "t", Env: "live"}, now, 2*time.Minute); err == nil {
		t.Fatal("ttl over IdentityMaxTTL accepted")
	}
}
