package gqlcache

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
)

// paramShared ends the Cache-Status of a hit answered from Redis.
const paramShared = "; detail=shared"

// sharedReq is what a local miss learned from Redis: the shared key, the
// cursor its request started at, and the purge epoch, so that its answer
// can be shared.
type sharedReq struct {
	key   string
	seen  int64
	epoch int64
}

// sharedLookup looks a local miss up in Redis. It serves a valid entry (and
// keeps it in memory) and reports served; otherwise sr says how to share the
// fresh answer (nil: not at all — Redis failed). A Redis failure is a miss,
// never an error of the request.
func (h *Handler) sharedLookup(w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, m *metrics,
	key cacheKey, material []byte, tags tagList, startSeq uint64, noCache bool) (sr *sharedReq, served bool) {
	sh := h.inst.shared
	seen := sh.seen()
	skey := sh.key(material)
	se, epoch, err := sh.lookup(r.Context(), skey)
	switch {
	case errors.Is(err, errUndecodable):
		m.shared(sharedUndecodable) // overwritten by the fresh answer
	case err != nil:
		m.shared(sharedError)
		sh.reportError("get", err)
		return nil, false
	}
	sr = &sharedReq{key: skey, seen: seen, epoch: epoch}
	if se == nil || noCache {
		if err == nil {
			m.shared(sharedMiss)
		}
		return sr, false
	}
	now := h.now()
	if !h.inst.up.Load() || !sh.valid(se) || !now.Before(se.stored.Add(se.ttl)) ||
		se.vary != nil && varySum(se.vary, r.Header) != se.varySum { // another variant: this answer replaces it

		m.shared(sharedRejected)
		return sr, false
	}
	hdr := http.Header{}
	if se.ctype != "" {
		hdr["Content-Type"] = []string{se.ctype}
	}
	e := h.newEntry(key, se.status, hdr, se.body, se.surrogate, se.stored, se.ttl)
	e.vary, e.varySum = se.vary, se.varySum
	// A tag invalidated here since the request started: the entry may
	// predate it (its change's id may not be above seen in lastChange yet).
	if h.inst.store.put(e, tags, startSeq) == detailInvalidated {
		m.shared(sharedRejected)
		return sr, false
	}
	m.shared(sharedHit)
	m.hits.Inc()
	repl.Set(PlaceholderCache, "hit")
	h.serveEntry(w, r, e, now, paramShared)
	return nil, true
}

// sharePut shares an entry just stored in memory.
func (h *Handler) sharePut(sr *sharedReq, e *entry, tags tagList) {
	se := &sharedEntry{status: e.status, body: e.body, surrogate: e.surrogate, seen: sr.seen, epoch: sr.epoch,
		stored: e.stored, ttl: e.expires.Sub(e.stored), vary: e.vary, varySum: e.varySum}
	if e.ctype != nil {
		se.ctype = e.ctype[0]
	}
	for t := range tags.each {
		se.tags = append(se.tags, t)
	}
	m := h.inst.store.metrics.Load()
	if err := h.inst.shared.put(sr.key, se, se.ttl); err != nil {
		m.shared(sharedError)
		h.inst.shared.reportError("set", err)
		return
	}
	m.shared(sharedStored)
}
