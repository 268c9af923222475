package auth

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/internal/boundedlru"
	"github.com/civicgate/civicgate/modules/auth/accesstoken"
	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// Access tokens from the team's identity provider (docs/identity.md): a
// bearer value without the cg_ prefix, when the app has a jwt block, is
// verified by accesstoken and then served exactly like an API key — the
// same placeholders, request value, identity assertion and credential watch
// — so every later handler applies its policy unchanged.

// Messages of the refusals the token path adds to accesstoken's kinds
// (docs/identity.md "Errors").
const (
	msgTokenDenied  = "Access token denied"
	msgTokenExpired = "token expired" // the close reason of a stream whose token expired
)

var bodyTokenDenied = contract.ErrorBody(msgTokenDenied)

// apiKeyPrefix marks civicgate's own keys (keystore.NewKey): a bearer value
// with it goes to the key store, any other to the token path.
const apiKeyPrefix = "cg_"

// tokenAuth is the app's token path: the verifier, the resolved tokens, the
// deny list and the watches of streams opened with a token.
type tokenAuth struct {
	verifier *accesstoken.Verifier
	app      *App
	// challenges are the WWW-Authenticate values: [0] for a request without
	// a credential (realm and, with RFC 9728 metadata, resource_metadata),
	// per kind the refusal's.
	metadataURL string
	plain       []string
	kinds       map[accesstoken.Kind][]string
	denied      []string

	mu    sync.Mutex
	cache *boundedlru.LRU[[sha256.Size]byte, *resolvedToken]

	denials atomic.Pointer[keystore.DenySet]
	// orgs: organization statuses of the store, cached (tokenorgs.go).
	orgs orgStatuses

	watchMu sync.Mutex
	watches map[*tokenWatch]struct{}
}

func newTokenAuth(v *accesstoken.Verifier, a *App, metadataURL string) *tokenAuth {
	t := &tokenAuth{verifier: v, app: a, metadataURL: metadataURL, watches: map[*tokenWatch]struct{}{}}
	t.cache = boundedlru.New(boundedlru.Options[[sha256.Size]byte, *resolvedToken]{MaxLen: cmp.Or(max(a.JWT.CacheSize, 0), accesstoken.DefaultCacheSize)})
	t.plain = []string{t.challenge("")}
	t.kinds = make(map[accesstoken.Kind][]string)
	for _, k := range accesstoken.Kinds() {
		t.kinds[k] = []string{t.challenge(`error="` + k.Code() + `", error_description="` + k.Description() + `"`)}
	}
	t.denied = []string{t.challenge(`error="invalid_token", error_description="` + msgTokenDenied + `"`)}
	t.denials.Store(&keystore.DenySet{})
	t.orgs.init(a)
	return t
}

// challenge is a Bearer challenge with params, naming the resource
// metadata when there is one (RFC 6750 §3, RFC 9728 §5.1).
func (t *tokenAuth) challenge(params string) string {
	c := `Bearer realm="civicgate"`
	if t.metadataURL != "" {
		c += `, resource_metadata="` + t.metadataURL + `"`
	}
	if params != "" {
		c += ", " + params
	}
	return c
}

// resolvedToken is a verified token as requests use it, cached by the
// token's SHA-256 until it expires: the identity, the caller recorded in the
// request value, the {civic.*} placeholders and the identity assertion.
type resolvedToken struct {
	t      *tokenAuth
	id     accesstoken.Identity
	tier   *tierPolicy
	caller contract.Caller
	// boxed once, like resolvedKey's: publishing allocates nothing
	keyIDVal, orgVal, tierVal, envVal, familiesVal any
	placeholders                                   caddy.ReplacerFunc
	ident                                          atomic.Pointer[signedIdentity]
}

func (rt *resolvedToken) placeholder(name string) (any, bool) {
	switch name {
	case contract.CivicKeyID:
		return rt.keyIDVal, true
	case contract.CivicOrg:
		return rt.orgVal, true
	case contract.CivicTier:
		return rt.tierVal, true
	case contract.CivicEnv:
		return rt.envVal, true
	case contract.CivicRate:
		return rt.tier.rateVal, true
	case contract.CivicCostBudget:
		return rt.tier.costVal, true
	case contract.CivicFamilies:
		return rt.familiesVal, true
	}
	return nil, false
}

// newResolvedToken derives what requests need from a verified identity; org
// is the organization as the key store knows it (tokenorgs.go). The
// families are the tier's less those whose require_scope scope the token
// lacks, so graphql_guard refuses them like any family the tier lacks.
func (t *tokenAuth) newResolvedToken(id accesstoken.Identity, org string) *resolvedToken {
	tier := t.app.tiers[id.Tier]
	fams := tier.families
	if len(id.DeniedFamilies) > 0 {
		fams = slices.DeleteFunc(slices.Clone(fams), id.Denies)
	}
	rt := &resolvedToken{t: t, id: id, tier: tier,
		caller:   contract.Caller{KeyID: id.KeyID, Org: org, Tier: id.Tier, Env: t.app.Environment, Families: fams},
		keyIDVal: id.KeyID, orgVal: org, tierVal: id.Tier, envVal: t.app.Environment, familiesVal: strings.Join(fams, ","),
	}
	rt.placeholders = rt.placeholder
	return rt
}

// resolve returns the token's resolved value (placeholders, caller,
// assertion), cached by the token's hash while the verifier says its
// identity is Valid — before exp plus leeway, its key still published; then
// the verifier answers why not (expired, unknown key). A token not seen before counts against the client's
// failed_lookups budget until it verifies, so a flood of forged tokens from
// one address is refused with 429 before any signature is checked.
func (t *tokenAuth) resolve(r *http.Request, token string, now time.Time) (rt *resolvedToken, wait time.Duration, err error) {
	sum := accesstoken.HashToken(token)
	t.mu.Lock()
	rt, ok := t.cache.Get(sum)
	t.mu.Unlock()
	if ok {
		if t.verifier.Valid(&rt.id) {
			return rt, 0, nil
		}
		// expired, or its key withdrawn: the verifier says which
		t.mu.Lock()
		t.cache.Delete(sum)
		t.mu.Unlock()
		if _, err := t.verifier.VerifyHashed(r.Context(), token, &sum); err != nil {
			return nil, 0, err
		}
	}
	failed := t.app.failed
	client := clientAddr(r)
	if failed != nil {
		w, ok := failed.reserve(client, now)
		if !ok {
			return nil, max(w, time.Nanosecond), nil
		}
	}
	id, err := t.verifier.VerifyHashed(r.Context(), token, &sum)
	if err != nil {
		return nil, 0, err
	}
	if failed != nil {
		failed.refund(client)
	}
	rt = t.newResolvedToken(id, t.orgs.storeID(r.Context(), id.Organization, now))
	t.mu.Lock()
	t.cache.Put(sum, rt)
	t.mu.Unlock()
	return rt, 0, nil
}

// serveToken authenticates a bearer value that is not an API key.
func (h *Handler) serveToken(w http.ResponseWriter, r *http.Request, as *authSpan, t *tokenAuth, token string) (*http.Request, bool, error) {
	now := time.Now()
	rt, wait, err := t.resolve(r, token, now)
	if wait > 0 {
		return nil, false, h.refuseThrottled(w, as, wait)
	}
	if err != nil {
		te := refusalOf(err)
		if te == nil { // the request's context ended while waiting
			return nil, false, h.refuse(w, as, http.StatusServiceUnavailable, contract.BodyInternal, outcomeError)
		}
		w.Header()["Www-Authenticate"] = t.kinds[te.Kind]
		return nil, false, h.refuse(w, as, te.Kind.Status(), te.Kind.Body(), tokenOutcomes[te.Kind])
	}
	if kind, denied := t.denials.Load().Denied(rt.id.Issuer, rt.id.Subject, rt.id.JTI); denied {
		h.refusalLog().Info("access token refused", zap.String("key_id", rt.id.KeyID), zap.String("org", rt.id.Organization), zap.String("reason", "denied_"+kind))
		w.Header()["Www-Authenticate"] = t.denied
		return nil, false, h.refuse(w, as, http.StatusUnauthorized, bodyTokenDenied, outcomeTokenDenied)
	}
	as.setOrg(rt.caller.Org)
	if t.orgs.suspended(r.Context(), rt.id.Organization, now) {
		h.refusalLog().Info("access token refused", zap.String("key_id", rt.id.KeyID), zap.String("org", rt.id.Organization), zap.String("reason", outcomeSuspended))
		return nil, false, h.refuse(w, as, http.StatusForbidden, contract.BodyOrgSuspended, outcomeSuspended)
	}
	if h.RequireFamily != "" {
		if !rt.tier.entitled(h.RequireFamily) {
			w.Header()[contract.HeaderRefusedFamily] = h.refusedFamily
			return nil, false, h.refuse(w, as, http.StatusForbidden, contract.BodyNotEntitled, outcomeNotEntitled)
		}
		if err := t.verifier.RequireFamily(&rt.id, h.RequireFamily); err != nil {
			te := refusalOf(err)
			if te == nil {
				return nil, false, h.refuse(w, as, http.StatusForbidden, contract.BodyNotEntitled, outcomeNotEntitled)
			}
			// the tier owns the family; the token lacks its scope (RFC 6750 insufficient_scope)
			hdr := w.Header()
			hdr[contract.HeaderRefusedFamily] = h.refusedFamily
			hdr["Www-Authenticate"] = []string{t.challenge(te.Challenge())}
			return nil, false, h.refuse(w, as, te.Kind.Status(), te.Kind.Body(), tokenOutcomes[te.Kind])
		}
	}
	assertion, err := h.app.assertionFor(&rt.caller, &rt.ident, now)
	if err != nil {
		h.logger.Error("signing the identity assertion failed", zap.String("key_id", rt.id.KeyID), zap.Error(err))
		return nil, false, h.refuse(w, as, http.StatusInternalServerError, contract.BodyInternal, outcomeError)
	}
	r = h.admit(r, rt.placeholders, assertion)
	r, q := contract.AttachRequest(r)
	q.SetCredential(&rt.caller, token, rt)
	q.SetIdentitySource(rt)
	return r, true, nil
}

// refusalLog is the sampled refusal logger (the handler's own when built
// without Provision).
func (h *Handler) refusalLog() *zap.Logger {
	if h.refusals != nil {
		return h.refusals
	}
	return h.logger
}

// refusalOf is err's *accesstoken.Error, or nil (errors.As's target escapes:
// called only on the refusal path).
func refusalOf(err error) *accesstoken.Error {
	var te *accesstoken.Error
	if errors.As(err, &te) {
		return te
	}
	return nil
}
