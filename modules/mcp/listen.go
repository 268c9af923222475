package mcp

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// subscriptions/listen (revision 2026-07-28, docs/design.md D80): the one
// thing the modern era holds per agent, an open stream that tells the
// client its tool list changed. It is bound like a 2025 session (D50): to
// the key that opened it (max_sessions_per_key streams per key,
// max_sessions in all, counted apart from sessions), to its credential (the
// watch ends it within 2 s of a revocation or suspension), and to the
// configuration (a reload ends it with the graceful closing result, and the
// client opens another on the new one). A tier change reaches it on every
// instance through the same watch (contract.EntitlementWatch: civic_auth's
// recheck of the key after the store's NOTIFY org:, or its fallback tick),
// and on this instance also from the key's next request (seen).

// codeTooManyListens refuses a stream over the caps (outside the JSON-RPC
// reserved range, as every modern civic_mcp code).
const codeTooManyListens = -31031

// listener is one open stream.
type listener struct {
	key      string
	families string        // guarded by the table's mu
	changed  chan struct{} // a tier change to tell (capacity 1)
}

// listenTable holds the streams of one civic_mcp handler.
type listenTable struct {
	max, maxPerKey int

	mu     sync.Mutex
	byKey  map[string][]*listener
	total  int
	closed bool
	done   chan struct{} // closed when the configuration is unloaded
}

func newListenTable(max, maxPerKey int) *listenTable {
	return &listenTable{max: max, maxPerKey: maxPerKey, byKey: map[string][]*listener{}, done: make(chan struct{})}
}

// add opens a stream of key, or reports why not (429: the key's cap; 503:
// the handler's).
func (t *listenTable) add(key, families string) (*listener, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, http.StatusServiceUnavailable
	case len(t.byKey[key]) >= t.maxPerKey:
		return nil, http.StatusTooManyRequests
	case t.total >= t.max:
		return nil, http.StatusServiceUnavailable
	}
	l := &listener{key: key, families: families, changed: make(chan struct{}, 1)}
	t.byKey[key] = append(t.byKey[key], l)
	t.total++
	return l, 0
}

func (t *listenTable) remove(l *listener) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := t.byKey[l.key]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i], ls[i+1:]...)
			t.total--
			break
		}
	}
	if len(ls) == 0 {
		delete(t.byKey, l.key)
	} else {
		t.byKey[l.key] = ls
	}
}

// seen records the families a request of key was admitted with: each of
// the key's streams opened for other families is told its list changed.
func (t *listenTable) seen(key, families string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.byKey[key] {
		l.refamily(families)
	}
}

// watched records the families the stream's credential watch reports
// (contract.EntitlementWatch): a change from the stream's is told, once
// whether the watch or a request (seen) reports it first.
func (t *listenTable) watched(l *listener, families string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l.refamily(families)
}

// refamily sets l's families (the table's mu held) and, if they differ,
// signals l.changed.
func (l *listener) refamily(families string) {
	if l.families == families {
		return
	}
	l.families = families
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// closeAll ends every stream (the configuration is unloaded).
func (t *listenTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.done)
	}
}

// listenParams is what subscriptions/listen asks for.
type listenParams struct {
	Notifications struct {
		ToolsListChanged bool `json:"toolsListChanged"`
	} `json:"notifications"`
	Meta struct {
		Version      *string         `json:"io.modelcontextprotocol/protocolVersion"`
		Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

// serveListen answers subscriptions/listen (serveModern checked its headers
// and charged its message): an SSE stream, acknowledged first, carrying
// notifications/tools/list_changed when the key's tier changes, until the
// client leaves, the credential ends or the configuration is unloaded.
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, q *contract.Request, caller *contract.Caller, body []byte, id json.RawMessage, families string) {
	var msg struct {
		Params listenParams `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		h.refuse(w, refusedBadRequest, http.StatusBadRequest, id, codeInvalidParams, "params must be an object")
		return
	}
	m := msg.Params.Meta
	switch {
	case m.Version == nil || len(m.Capabilities) == 0 || m.Capabilities[0] != '{':
		h.refuse(w, refusedBadRequest, http.StatusBadRequest, id, codeInvalidParams, "missing or invalid _meta field "+metaVersion)
		return
	case *m.Version != versionModern:
		h.refuseMismatch(w, id, "the MCP-Protocol-Version header does not match _meta's "+metaVersion)
		return
	}
	if string(id) == "null" {
		h.refuse(w, refusedBadRequest, http.StatusBadRequest, id, codeInvalidRequest, "Invalid Request")
		return
	}
	l, status := h.listens.add(caller.KeyID, families)
	if l == nil {
		w.Header()["Retry-After"] = []string{"60"}
		h.refuse(w, refusedListens, status, id, codeTooManyListens,
			"Too many open subscriptions/listen streams; close one or try again later")
		return
	}
	defer h.listens.remove(l)
	var watch contract.CredentialWatch
	if wt := q.Watcher(); wt != nil {
		watch = wt.WatchCredential()
		defer watch.Stop()
	}
	var ended, entitled <-chan struct{}
	var ew contract.EntitlementWatch
	if watch != nil {
		ended = watch.Done()
		if ew, _ = watch.(contract.EntitlementWatch); ew != nil {
			entitled = ew.Changed()
		}
	}
	hdr := w.Header()
	hdr["Content-Type"] = []string{"text/event-stream"}
	hdr["Cache-Control"] = noCache
	hdr["X-Accel-Buffering"] = []string{"no"}
	w.WriteHeader(http.StatusOK)
	sw := newStreamWriter(w)
	subscription := `{"io.modelcontextprotocol/subscriptionId":` + string(id) + `}`
	agreed := `{}`
	if msg.Params.Notifications.ToolsListChanged {
		agreed = `{"toolsListChanged":true}`
	}
	if !writeEvent(sw, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":`+subscription+`,"notifications":`+agreed+`}}`) {
		return
	}
	h.metrics.listens.Inc()
	defer h.metrics.listens.Dec()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ended:
			h.logger.Info("MCP subscriptions/listen ended: its credential is no longer valid",
				zap.String("key_id", caller.KeyID), zap.String("reason", watch.Reason()))
			return
		case <-entitled: // a tier change seen by civic_auth's recheck, from any instance
			h.listens.watched(l, ew.Families())
		case <-h.listens.done:
			writeEvent(sw, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"resultType":"complete","_meta":`+subscription+`}}`)
			return
		case <-l.changed:
			if msg.Params.Notifications.ToolsListChanged &&
				!writeEvent(sw, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":`+subscription+`}}`) {
				return
			}
		}
	}
}

// writeEvent writes one SSE message event and flushes it; false: the
// client is gone.
func writeEvent(sw *streamWriter, data string) bool {
	if _, err := sw.Write([]byte("event: message\ndata: " + data + "\n\n")); err != nil {
		return false
	}
	return sw.FlushError() == nil
}

// listenID is the JSON id of a listen request as written back in _meta
// (null: not a string or a number).
func listenID(id json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return null
	}
	rid, err := jsonrpc.MakeID(v)
	if err != nil {
		return null
	}
	b, err := json.Marshal(rid.Raw())
	if err != nil {
		return null
	}
	return b
}
