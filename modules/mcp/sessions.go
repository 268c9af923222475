package mcp

import (
	"crypto/rand"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/contract"
)

// Sessions are bound to the credential that opened them (docs/design.md
// D50): each has its own *mcpsdk.Server holding exactly the tools of its
// key's families, is known to the table by its id and key id, follows the
// credential (contract.CredentialWatch) and ends through one path, end:
// on DELETE, after session_idle_timeout without a request, when the
// credential stops being valid, when initialize fails, or when the
// configuration is unloaded. The SDK's own idle timeout is not used: it
// would end sessions behind the table's back (the SDK has no callback).

// sessionKey carries a request's session to serverOf (the SDK's getServer).
type sessionKey struct{}

// serverOf is the SDK's getServer: the server of the request's session,
// which civic_mcp found (or created, for an initialize) before the SDK saw
// the request. A request without one has already been answered.
func serverOf(r *http.Request) *mcpsdk.Server {
	if s, ok := r.Context().Value(sessionKey{}).(*session); ok {
		return s.server
	}
	return nil
}

// session is one MCP session.
type session struct {
	id     string
	key    string // the key id that opened it
	server *mcpsdk.Server
	table  *sessionTable

	mu         sync.Mutex
	families   []string // the caller's families the tools are for (shared, read-only)
	csv        string   // the same, comma-separated (ToolSet.For, Tool.Entitled)
	refs       int      // POSTs in progress
	lastActive time.Time
	ended      bool
	calls      map[string]*liveCall // tools/call POSTs in progress (toolcall.go)
	seq        uint64
	idle       *time.Timer
	watch      contract.CredentialWatch

	toolsMu sync.Mutex // serializes tool list changes

	ready atomic.Bool // sdkReady's answer once true (it stays true)
}

// sessionTable holds the sessions of one civic_mcp handler.
type sessionTable struct {
	h         *Handler
	max       int
	maxPerKey int
	idle      time.Duration

	mu      sync.Mutex
	byID    map[string]*session
	perKey  map[string]int
	opening int // sessions counted in perKey, not yet in byID
}

func newSessionTable(h *Handler, max, maxPerKey int, idle time.Duration) *sessionTable {
	return &sessionTable{h: h, max: max, maxPerKey: maxPerKey, idle: idle,
		byID: map[string]*session{}, perKey: map[string]int{}}
}

// refusal is why a session was not opened.
type refusal struct {
	reason     string
	status     int
	message    string
	retryAfter int // seconds
}

// open creates a session for caller, or says why not: the key holds
// max_sessions_per_key sessions (429), or the handler max_sessions (503).
// The session is in the table before the SDK answers the initialize, so a
// client that reads the id from the answer's headers can use it at once.
func (t *sessionTable) open(caller *contract.Caller, q *contract.Request) (*session, *refusal) {
	t.mu.Lock()
	switch {
	case t.perKey[caller.KeyID] >= t.maxPerKey:
		wait := t.retryAfterLocked(caller.KeyID)
		t.mu.Unlock()
		return nil, &refusal{refusedKeySessions, http.StatusTooManyRequests,
			"Too many open MCP sessions for this key; end one (DELETE) or wait for an idle one to expire", wait}
	case len(t.byID)+t.opening >= t.max:
		wait := t.retryAfterLocked("")
		t.mu.Unlock()
		return nil, &refusal{refusedSessions, http.StatusServiceUnavailable,
			"Too many open MCP sessions on this gateway; try again later", wait}
	}
	t.perKey[caller.KeyID]++
	t.opening++
	t.mu.Unlock()

	s := &session{id: rand.Text(), key: caller.KeyID, table: t, families: caller.Families,
		csv: strings.Join(caller.Families, ","), calls: map[string]*liveCall{}}
	s.server = t.h.newServer(s)
	s.idle = time.AfterFunc(t.idle, s.idleExpired)
	if w := q.Watcher(); w != nil {
		s.watch = w.WatchCredential()
	}
	t.h.metrics.open.Inc()
	t.h.metrics.opened.Inc()
	t.mu.Lock()
	t.opening--
	t.byID[s.id] = s
	t.mu.Unlock()
	if s.watch != nil {
		go s.follow(s.watch)
	}
	return s, nil
}

// retryAfterLocked is the seconds until the first idle session of key (""
// for any key) expires, at least 1; the idle timeout when none is idle.
func (t *sessionTable) retryAfterLocked(key string) int {
	soonest := t.idle
	now := time.Now()
	for _, s := range t.byID {
		if key != "" && s.key != key {
			continue
		}
		s.mu.Lock()
		if s.refs == 0 && !s.lastActive.IsZero() {
			soonest = min(soonest, s.lastActive.Add(t.idle).Sub(now))
		}
		s.mu.Unlock()
	}
	return max(1, int((soonest+time.Second-1)/time.Second))
}

// lookup returns the session id of key, or nil: a session of another key
// is as unknown as one that never was.
func (t *sessionTable) lookup(id, key string) *session {
	t.mu.Lock()
	s := t.byID[id]
	t.mu.Unlock()
	if s == nil || s.key != key {
		return nil
	}
	return s
}

// end ends s once: its tool calls in progress are canceled, it leaves the
// table, its watch stops and its SDK session closes (which waits for the
// canceled calls to return).
func (t *sessionTable) end(s *session, reason string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.idle.Stop()
	for _, c := range s.calls {
		c.cancel()
	}
	s.mu.Unlock()

	t.mu.Lock()
	delete(t.byID, s.id)
	if t.perKey[s.key]--; t.perKey[s.key] <= 0 {
		delete(t.perKey, s.key)
	}
	t.mu.Unlock()
	if s.watch != nil {
		s.watch.Stop()
	}
	// Counted before the SDK session closes its streams: a client that sees
	// its stream end finds the end counted.
	t.h.metrics.open.Dec()
	t.h.metrics.ended.WithLabelValues(reason).Inc()
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
}

// endAll ends every session (the configuration is unloaded).
func (t *sessionTable) endAll(reason string) {
	t.mu.Lock()
	all := make([]*session, 0, len(t.byID))
	for _, s := range t.byID {
		all = append(all, s)
	}
	t.mu.Unlock()
	for _, s := range all {
		t.end(s, reason)
	}
}

// begin marks a POST of the session in progress (the idle timer waits),
// or reports that the session has ended.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	if s.refs++; s.refs == 1 {
		s.idle.Stop()
	}
	return true
}

// finish ends what begin began; the idle timer restarts with the last POST.
func (s *session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs--; s.refs == 0 && !s.ended {
		s.lastActive = time.Now()
		s.idle.Reset(s.table.idle)
	}
}

// idleExpired ends the session unless a POST began since the timer fired.
func (s *session) idleExpired() {
	s.mu.Lock()
	busy := s.refs > 0 || s.ended
	s.mu.Unlock()
	if !busy {
		s.table.end(s, endIdle)
	}
}

// follow ends the session when its credential stops being valid (the
// key revoked, rotated out or suspended, its organization suspended:
// within 2 s, contract.CredentialWatch). end stops the watch, which ends
// this goroutine otherwise.
func (s *session) follow(w contract.CredentialWatch) {
	<-w.Done()
	if reason := w.Reason(); reason != "" {
		s.table.h.logger.Info("MCP session ended: its credential is no longer valid",
			zap.String("key_id", s.key), zap.String("reason", reason))
		s.table.end(s, endRevoked)
	}
}

// initialized reports whether the SDK completed the session's initialize.
func (s *session) initialized() bool {
	for ss := range s.server.Sessions() {
		if ss.ID() == s.id && ss.InitializeParams() != nil {
			return true
		}
	}
	return false
}

// sdkReady reports whether the SDK would run a tools/call of the session
// now, as civic_mcp answers it (fastcall.go): its initialize has arrived
// (the SDK refuses calls before), for a revision before 2026-07-28 (from
// which the SDK marks each result with a resultType).
func (s *session) sdkReady() bool {
	if s.ready.Load() {
		return true
	}
	for ss := range s.server.Sessions() {
		if p := ss.InitializeParams(); ss.ID() == s.id && p != nil && p.ProtocolVersion < "2026-07-28" {
			s.ready.Store(true)
			return true
		}
	}
	return false
}

// tierFamilies returns the families the session's tools are for, as
// Tool.Entitled takes them.
func (s *session) tierFamilies() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.csv
}

// syncTools follows a tier change of the session's key (its families
// differ from the session's): the session's server gets the new tier's
// tools, and the SDK sends notifications/tools/list_changed.
func (h *Handler) syncTools(s *session, caller *contract.Caller) {
	s.mu.Lock()
	same := slices.Equal(s.families, caller.Families)
	s.mu.Unlock()
	if same {
		return
	}
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.mu.Lock()
	old := s.csv
	s.families, s.csv = caller.Families, strings.Join(caller.Families, ",")
	now := s.csv
	s.mu.Unlock()
	before, after := h.tools.For(old), h.tools.For(now)
	var gone []string
	for _, t := range before {
		if !slices.Contains(after, t) {
			gone = append(gone, t.Name)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveTools(gone...)
	}
	for _, t := range after {
		if !slices.Contains(before, t) {
			tool, _ := h.tools.Lookup(t.Name)
			s.server.AddTool(t, h.toolHandler(s, tool))
		}
	}
}
