package accesstoken

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"

	"github.com/civicgate/civicgate/internal/boundedlru"
)

// Verifier checks access tokens of one issuer. Safe for concurrent use.
type Verifier struct {
	cfg    Config
	names  claimNames
	keys   *keySource
	parser *jwt.Parser
	sem    chan struct{}

	mu    sync.Mutex
	cache *boundedlru.LRU[[sha256.Size]byte, *entry]

	scopeRefusals map[string]*Error

	verified, hits, waits atomic.Uint64
	refused               [numKinds]atomic.Uint64
}

// entry is a verified token: its identity — or, for a token whose tier is
// missing or unknown, that refusal — while now < until (exp + leeway) and
// its key is still in the set.
type entry struct {
	id      Identity
	refusal *Error
	until   time.Time
	key     *jwk
}

// New checks cfg, finds the key set (discovery unless JWKSURL is set) and
// fetches it. An error names the URL that failed: for a provision error.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Algorithms = slices.Clone(cfg.Algorithms)
	cfg.Tiers = slices.Clone(cfg.Tiers)
	cfg.ScopeTiers = slices.Clone(cfg.ScopeTiers)
	cfg.RequireScopes = slices.Clone(cfg.RequireScopes)

	client := newHTTPClient(cfg.Transport, cfg.FetchTimeout)
	jwksURL := cfg.JWKSURL
	if jwksURL == "" {
		var err error
		if jwksURL, err = discover(ctx, client, cfg.Issuer); err != nil {
			return nil, fmt.Errorf("jwt: discovery of issuer %s: %w", cfg.Issuer, err)
		}
	}
	keys := newKeySource(&cfg, jwksURL, client)
	if err := keys.load(ctx); err != nil {
		keys.close()
		return nil, fmt.Errorf("jwt: %w", err)
	}
	v := &Verifier{
		cfg:   cfg,
		names: claimNames{tier: cfg.TierClaim, org: cfg.OrgClaim, subject: cfg.SubjectClaim},
		keys:  keys,
		// golang-jwt verifies the signature and checks iss, aud, exp, nbf and
		// iat again after admit did: two readings must agree to admit.
		parser: jwt.NewParser(
			jwt.WithValidMethods(cfg.Algorithms),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithTimeFunc(cfg.Now),
			jwt.WithStrictDecoding(),
		),
		sem:           make(chan struct{}, cfg.MaxConcurrent),
		cache:         boundedlru.New(boundedlru.Options[[sha256.Size]byte, *entry]{MaxLen: cfg.CacheSize}),
		scopeRefusals: map[string]*Error{},
	}
	for _, fs := range cfg.RequireScopes {
		v.scopeRefusals[fs.Family] = &Error{Kind: InsufficientScope, Scope: fs.Scope, challenge: challenge(InsufficientScope, fs.Scope)}
	}
	return v, nil
}

// Close stops key set refreshes and waits for a running one.
func (v *Verifier) Close() { v.keys.close() }

// JWKSURL is where the keys come from (configured or discovered).
func (v *Verifier) JWKSURL() string { return v.keys.url }

// Verify returns the identity of a token, or why it is refused: an *Error,
// or — only while waiting for a verification slot or a key set refresh — a
// wrapped ctx.Err(). A token seen before and still valid costs a SHA-256 and
// a map lookup, without allocating.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	if len(token) > v.cfg.MaxTokenSize {
		v.refused[TooLarge].Add(1)
		return Identity{}, refusal(TooLarge)
	}
	sum := HashToken(token)
	return v.VerifyHashed(ctx, token, &sum)
}

// VerifyHashed is Verify for a caller that already holds HashToken(token)
// (a cache of its own keyed by it): the token is hashed once per request.
func (v *Verifier) VerifyHashed(ctx context.Context, token string, sum *[sha256.Size]byte) (Identity, error) {
	if len(token) > v.cfg.MaxTokenSize {
		v.refused[TooLarge].Add(1)
		return Identity{}, refusal(TooLarge)
	}
	now := v.cfg.Now()
	v.keys.maybeRefresh(now)
	if id, refused, ok := v.cached(sum, now); ok {
		if refused != nil {
			v.refused[refused.Kind].Add(1)
			return Identity{}, refused
		}
		v.hits.Add(1)
		return id, nil
	}
	id, key, err := v.verify(ctx, token, now)
	var refused *Error
	if err != nil && !errors.As(err, &refused) {
		return Identity{}, err // the context's: no refusal
	}
	if refused != nil {
		v.refused[refused.Kind].Add(1)
	} else {
		v.verified.Add(1)
	}
	if key != nil { // signature verified: the answer holds until exp
		id.key = key
		v.mu.Lock()
		v.cache.Put(*sum, &entry{id: id, refusal: refused, until: id.Expiry.Add(v.cfg.Leeway), key: key})
		v.mu.Unlock()
	}
	if refused != nil {
		return Identity{}, refused
	}
	return id, nil
}

// Valid reports whether an identity Verify returned still holds: before its
// exp plus the leeway, and its key still published (a refresh that no longer
// lists it retires it). It starts a due key set refresh as Verify does and
// counts a cache hit: a caller keeping identities of its own (by
// HashToken) asks Valid instead of Verify for a token it has seen, without
// a second lookup.
func (v *Verifier) Valid(id *Identity) bool {
	now := v.cfg.Now()
	v.keys.maybeRefresh(now)
	if !now.Before(id.Expiry.Add(v.cfg.Leeway)) || id.key == nil || id.key.retired.Load() {
		return false
	}
	v.hits.Add(1)
	return true
}

// HashToken is the SHA-256 of a token, read in place: []byte(token) would
// copy it to the heap, a stack buffer would be zeroed on every call, and a
// hit must cost well under a microsecond. Sum256 only reads the slice.
func HashToken(token string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

func (v *Verifier) cached(sum *[sha256.Size]byte, now time.Time) (Identity, *Error, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.cache.Get(*sum)
	if !ok {
		return Identity{}, nil, false
	}
	if !now.Before(e.until) || e.key.retired.Load() {
		v.cache.Delete(*sum)
		return Identity{}, nil, false
	}
	return e.id, e.refusal, true
}

// verify reads and checks a token not in the cache: the strict header, then
// golang-jwt's parse with the strict payload reader, whose key function
// runs the claim checks (admit), finds the key and takes a verification
// slot; then the signature; then the tier. A returned key means the
// signature verified (the identity lacks only the tier when the tier is
// refused).
func (v *Verifier) verify(ctx context.Context, token string, now time.Time) (Identity, *jwk, error) {
	h, rerr := parseHeader(token, v.cfg.Algorithms)
	if rerr != nil {
		return Identity{}, nil, rerr
	}
	c := claims{names: &v.names}
	var (
		id   Identity
		key  *jwk
		held bool
	)
	_, err := v.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) {
		var rerr *Error
		if id, rerr = v.admit(&c, now); rerr != nil {
			return nil, rerr
		}
		k, err := v.keys.lookup(ctx, h.kid, h.hasKid, h.alg)
		if err != nil {
			return nil, err
		}
		if err := v.acquire(ctx); err != nil {
			return nil, err
		}
		held, key = true, k
		return k.pub, nil
	})
	if held {
		<-v.sem
	}
	if err != nil {
		return Identity{}, nil, classify(err)
	}
	if id.Tier, rerr = v.tierOf(&c); rerr != nil {
		return id, key, rerr
	}
	return id, key, nil
}

// acquire takes a verification slot, waiting with ctx when all are taken.
func (v *Verifier) acquire(ctx context.Context) error {
	select {
	case v.sem <- struct{}{}:
		return nil
	default:
	}
	v.waits.Add(1)
	select {
	case v.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("accesstoken: waiting to verify: %w", ctx.Err())
	}
}

// classify maps golang-jwt's errors to a Kind; an *Error of ours and a
// context's error pass through.
func classify(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return refusal(BadSignature)
	case errors.Is(err, jwt.ErrTokenExpired):
		return refusal(Expired)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return refusal(NotYetValid)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return refusal(WrongAudience)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return refusal(WrongIssuer)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return refusal(MissingClaim)
	}
	return refusal(Malformed)
}

// RequireFamily returns the InsufficientScope refusal when family needs a
// scope (RequireScopes) that id's token lacks; nil otherwise.
func (v *Verifier) RequireFamily(id *Identity, family string) error {
	if id.Denies(family) {
		if e := v.scopeRefusals[family]; e != nil {
			return e
		}
	}
	return nil
}
