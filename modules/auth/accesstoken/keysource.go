package accesstoken

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// keySource holds the issuer's current key set and refreshes it: when its
// Cache-Control lifetime has passed (in the background, the old set serving
// meanwhile) and when a token names an unknown kid (the request waits). One
// fetch at a time, at most one per minInterval. A failed refresh keeps the
// last good set: an outage of the identity provider never turns a token of
// a known key into a refusal.
type keySource struct {
	url         string
	client      *http.Client
	log         *slog.Logger
	now         func() time.Time
	cacheMin    time.Duration
	cacheMax    time.Duration
	minInterval time.Duration
	timeout     time.Duration

	set atomic.Pointer[keySet]
	// due is when (Unix ns) a background refresh is next wanted: the set's
	// lifetime end, or after a failure the next allowed attempt.
	due     atomic.Int64
	fetched atomic.Int64 // Unix ns of the current set's fetch

	mu        sync.Mutex
	inflight  chan struct{} // closed when the running fetch ends; nil: none
	lastStart time.Time
	closed    bool

	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	refreshes   atomic.Uint64
	failures    atomic.Uint64
	rateLimited atomic.Uint64
}

var (
	errRateLimited = errors.New("key set refresh rate limited")
	errClosed      = errors.New("verifier closed")
)

func newKeySource(cfg *Config, jwksURL string, client *http.Client) *keySource {
	s := &keySource{
		url: jwksURL, client: client, log: cfg.Logger, now: cfg.Now,
		cacheMin: cfg.JWKSCacheMin, cacheMax: cfg.JWKSCacheMax,
		minInterval: cfg.JWKSRefreshMinInterval, timeout: cfg.FetchTimeout,
	}
	s.life, s.stop = context.WithCancel(context.Background())
	return s
}

// load fetches the first set; its error names the URL.
func (s *keySource) load(ctx context.Context) error {
	s.lastStart = s.now()
	set, ttl, err := s.fetch(ctx)
	if err != nil {
		return fmt.Errorf("key set %s: %w", s.url, err)
	}
	s.refreshes.Add(1)
	s.install(set, ttl, s.now())
	return nil
}

func (s *keySource) fetch(ctx context.Context) (*keySet, time.Duration, error) {
	body, header, err := get(ctx, s.client, s.url, maxJWKSBytes)
	if err != nil {
		return nil, 0, err
	}
	set, ignored, err := parseJWKS(body)
	for _, ig := range ignored {
		level := slog.LevelWarn
		if ig.routine {
			level = slog.LevelDebug
		}
		s.log.Log(ctx, level, "jwt: key ignored", "jwks_url", s.url, "kid", ig.kid, "reason", ig.reason)
	}
	if err != nil {
		return nil, 0, err
	}
	return set, cacheLifetime(header, s.cacheMin, s.cacheMax), nil
}

func (s *keySource) install(set *keySet, ttl time.Duration, at time.Time) {
	set.reuse(s.set.Load())
	s.set.Store(set)
	s.fetched.Store(at.UnixNano())
	s.due.Store(at.Add(ttl).UnixNano())
	s.log.Info("jwt: key set loaded", "jwks_url", s.url, "keys", len(set.all), "ignored", set.ignored, "refresh_in", ttl)
}

// maybeRefresh starts a background refresh when the set's lifetime has
// passed. Cheap when it has not: one atomic load.
func (s *keySource) maybeRefresh(now time.Time) {
	if now.UnixNano() >= s.due.Load() {
		_ = s.refresh(context.Background(), false)
	}
}

// refresh starts a fetch — or joins the running one — and, with wait, waits
// for its end or ctx. It returns errRateLimited without fetching when the
// last fetch started less than minInterval ago.
func (s *keySource) refresh(ctx context.Context, wait bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	ch := s.inflight
	if ch == nil {
		now := s.now()
		if now.Sub(s.lastStart) < s.minInterval {
			s.mu.Unlock()
			return errRateLimited
		}
		ch = make(chan struct{})
		s.inflight, s.lastStart = ch, now
		s.wg.Add(1)
		go s.run(ch)
	}
	s.mu.Unlock()
	if !wait {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("accesstoken: waiting for the key set: %w", ctx.Err())
	}
}

// run is one fetch, detached from the request that started it (a client
// going away does not abort the refresh others wait for).
func (s *keySource) run(done chan struct{}) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.life, s.timeout)
	set, ttl, err := s.fetch(ctx)
	cancel()
	now := s.now()
	if err != nil {
		s.due.Store(now.Add(s.minInterval).UnixNano())
		s.log.Warn("jwt: key set refresh failed; the last good set stays in use", "jwks_url", s.url, "error", err)
	} else {
		s.install(set, ttl, now)
	}
	s.mu.Lock()
	s.inflight = nil
	s.mu.Unlock()
	// Counted once the fetch is no longer joinable: whoever sees the count
	// and asks again starts (or is refused) a new fetch, never this one.
	if err != nil {
		s.failures.Add(1)
	} else {
		s.refreshes.Add(1)
	}
	close(done)
}

// lookup returns the key for a token's kid and alg. An unknown kid waits
// for one refresh (unless one started less than minInterval ago) and is
// looked up again — in the set current by then, which a refresh that ended
// just before this one asked may have brought.
func (s *keySource) lookup(ctx context.Context, kid string, hasKid bool, alg string) (*jwk, error) {
	k, kind := s.set.Load().find(kid, hasKid, alg)
	if kind == 0 {
		return k, nil
	}
	if kind != UnknownKey || !hasKid {
		return nil, refusal(kind)
	}
	err := s.refresh(ctx, true)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	if k, kind = s.set.Load().find(kid, hasKid, alg); kind != 0 {
		if errors.Is(err, errRateLimited) {
			s.rateLimited.Add(1)
		}
		return nil, refusal(kind)
	}
	return k, nil
}

// close stops refreshing and waits for a running fetch to end.
func (s *keySource) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}
