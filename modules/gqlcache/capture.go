package gqlcache

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/civicgate/civicgate/internal/rawjson"
)

// capture passes a miss's response to the client, holding back a response
// that may be stored until its end: whether it is stored (its size, an
// `errors` member) decides its Cache-Status, which goes before the body.
// A response that cannot be stored is written through at once.
type capture struct {
	w        http.ResponseWriter
	h        *Handler
	prefix   string // Cache-Status up to the outcome: "civicgate; fwd=miss"
	maxEntry int64
	graphql  bool // a GraphQL response: one with a top-level errors member is not stored
	// reqHeader is the request's header: the values its answer's Vary names.
	reqHeader http.Header

	wroteHeader bool
	holding     bool // the body is held in buf
	status      int
	buf         bytes.Buffer
	detail      string        // why it is not stored
	ttl         time.Duration // the freshness it would be stored with
	surrogate   []string
	vary        []string // the request headers the answer's Vary names
}

func (c *capture) Header() http.Header { return c.w.Header() }

// Unwrap lets http.ResponseController reach the client's writer.
func (c *capture) Unwrap() http.ResponseWriter { return c.w }

// WriteHeader decides from the status and headers whether the response may
// be stored; if not, it is written through now.
func (c *capture) WriteHeader(status int) {
	if c.wroteHeader {
		return
	}
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		c.w.WriteHeader(status) // informational: the final status follows
		return
	}
	c.wroteHeader, c.status = true, status
	hdr := c.w.Header()
	if sk := hdr.Values("Surrogate-Key"); len(sk) > 0 {
		for _, v := range sk {
			c.surrogate = append(c.surrogate, strings.Fields(v)...)
		}
		hdr.Del("Surrogate-Key")
	}
	c.detail, c.ttl, c.vary = c.h.storable(status, hdr)
	if c.detail == "" {
		if n, err := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64); err == nil && n > c.maxEntry {
			c.detail = detailTooLarge
		}
	}
	if c.detail != "" {
		c.writeThrough()
		return
	}
	c.holding = true
}

// writeThrough writes the header with the reason it is not stored.
func (c *capture) writeThrough() {
	c.holding = false
	c.w.Header()["Cache-Status"] = []string{c.prefix + "; detail=" + c.detail}
	c.w.WriteHeader(c.status)
}

func (c *capture) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	if !c.holding {
		return c.w.Write(p)
	}
	if int64(c.buf.Len()+len(p)) > c.maxEntry {
		c.detail = detailTooLarge
		c.writeThrough()
		if _, err := c.w.Write(c.buf.Bytes()); err != nil {
			return 0, err
		}
		c.buf = bytes.Buffer{}
		return c.w.Write(p)
	}
	return c.buf.Write(p)
}

// Flush flushes a response written through; a held one is sent at its end.
func (c *capture) Flush() {
	if c.wroteHeader && !c.holding {
		_ = http.NewResponseController(c.w).Flush()
	}
}

// finish stores a held response (unless its body says not to, or a tag was
// invalidated meanwhile) and writes it; it returns the entry stored, or nil.
func (c *capture) finish(key cacheKey, tags tagList, startSeq uint64, now time.Time) *entry {
	if !c.wroteHeader || !c.holding {
		return nil
	}
	c.holding = false
	body := c.buf.Bytes()
	if c.graphql {
		if _, found, ok := rawjson.UniqueMember(body, "errors"); found || !ok {
			c.detail = "errors"
			if !ok {
				c.detail = "not-json"
			}
		}
	}
	var e *entry
	if c.detail == "" {
		e = c.h.newEntry(key, c.status, c.w.Header(), body, c.surrogate, now, c.ttl)
		if c.vary != nil {
			e.vary, e.varySum = c.vary, varySum(c.vary, c.reqHeader)
		}
		c.detail = c.h.inst.store.put(e, tags, startSeq)
	}
	if c.detail != "" {
		c.w.Header()["Cache-Status"] = []string{c.prefix + "; detail=" + c.detail}
		e = nil
	} else {
		c.h.inst.store.metrics.Load().stores.Inc()
		c.w.Header()["Cache-Status"] = []string{c.prefix + "; stored"}
	}
	c.w.WriteHeader(c.status)
	_, _ = c.w.Write(body)
	return e
}
