package gqlcache

import (
	"net/http"
	"strconv"
	"time"
)

// serveEntry writes a stored response: its status, Content-Type and body,
// with Cache-Status and Age.
func (h *Handler) serveEntry(w http.ResponseWriter, r *http.Request, e *entry, now time.Time, param string) {
	hdr := w.Header()
	if e.ctype != nil {
		hdr["Content-Type"] = e.ctype
	}
	hdr["Content-Length"] = e.clen
	rh := e.headersAt(now)
	switch param {
	case "":
		hdr["Cache-Status"] = rh.vals[0:1:1]
	case paramShared:
		hdr["Cache-Status"] = []string{rh.vals[0] + paramShared}
	default:
		hdr["Cache-Status"] = []string{"civicgate; fwd=miss" + param}
	}
	hdr["Age"] = rh.vals[1:2:2]
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

// headersAt returns the hit's Cache-Status and Age at now, rendered once
// per second of age.
func (e *entry) headersAt(now time.Time) *renderedHeaders {
	age := max(0, int64(now.Sub(e.stored)/time.Second))
	if rh := e.rendered.Load(); rh != nil && rh.age == age {
		return rh
	}
	rh := &renderedHeaders{age: age}
	rh.vals[0] = "civicgate; hit; ttl=" + strconv.FormatInt(max(0, e.lifetime-age), 10)
	rh.vals[1] = strconv.FormatInt(age, 10)
	e.rendered.Store(rh)
	return rh
}

// storable says why a response with this status and headers is not
// stored ("" if it may be), the freshness it would be stored with and the
// request headers its Vary names (varyNames).
func (h *Handler) storable(status int, hdr http.Header) (string, time.Duration, []string) {
	switch {
	case status != http.StatusOK:
		return "status", 0, nil
	case len(hdr["Set-Cookie"]) > 0:
		return "set-cookie", 0, nil
	case hdr.Get("Content-Encoding") != "":
		return "encoded", 0, nil
	}
	vary, ok := varyNames(hdr["Vary"])
	if !ok {
		return "vary", 0, nil
	}
	ttl := h.ttl
	if cc := hdr["Cache-Control"]; len(cc) > 0 {
		rcc := parseCacheControl(cc)
		switch {
		case rcc.private:
			return "private", 0, nil
		case rcc.noStore:
			return "no-store", 0, nil
		case rcc.noCache:
			return "no-cache", 0, nil
		}
		upstream := rcc.sMaxAge
		if upstream < 0 {
			upstream = rcc.maxAge
		}
		if upstream >= 0 {
			ttl = min(ttl, time.Duration(upstream)*time.Second)
		}
	}
	if ttl <= 0 {
		return "ttl=0", 0, nil
	}
	return "", ttl, vary
}

// newEntry builds the entry of a response to store, with its header value
// slices made once.
func (h *Handler) newEntry(key cacheKey, status int, hdr http.Header, body []byte, surrogate []string, now time.Time, ttl time.Duration) *entry {
	ctype := hdr.Get("Content-Type")
	e := &entry{key: key, status: status, body: body, surrogate: surrogate, stored: now, expires: now.Add(ttl),
		lifetime: int64(ttl / time.Second)}
	vals := make([]string, 2)
	vals[1] = strconv.Itoa(len(body))
	if ctype != "" {
		vals[0] = ctype
		e.ctype = vals[0:1:1]
	}
	e.clen = vals[1:2:2]
	e.size = accountedSize(body, ctype, surrogate)
	return e
}
