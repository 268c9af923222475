package auth

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/civicgate/civicgate/modules/auth/keystore"
	"github.com/civicgate/civicgate/modules/contract"
)

// Credential watches (contract.Watcher): a long-lived exchange (WebSocket,
// event stream) admitted with a key asks civic_auth to tell it when that key
// stops being valid. Every request carries its cache entry as the Watcher (no
// extra allocation); only WatchCredential registers anything. The App's
// recheck worker (recheck.go) looks the watched keys up again and fires their
// watches; for a key still valid, it compares the families of its tier now
// with each watch's and signals those that differ (contract.EntitlementWatch,
// docs/design.md D80).

// WatchCredential implements contract.Watcher: it starts following the key
// this entry was looked up for.
func (e *resolvedKey) WatchCredential() contract.CredentialWatch {
	return e.watches.add(e.hash, e.rec.OrgID, familiesOf(e.tier))
}

// watchRegistry holds an App's live credential watches, grouped by key hash
// so that a recheck costs one lookup per distinct key however many exchanges
// use it, and the notifications (key:, org:, flush) that ask for a recheck
// before the next tick.
type watchRegistry struct {
	gauge prometheus.Gauge // live watches
	kick  chan struct{}    // capacity 1: a notification is pending
	// rounds counts finished recheck rounds (tests wait on it).
	rounds atomic.Int64

	mu         sync.Mutex
	keys       map[keystore.Hash]*watchedKey
	pending    map[keystore.Hash]struct{} // named by notifications since the last round
	pendingAll bool                       // a flush: every watched key is due
}

// watchedKey is one watched key and the watches following it.
type watchedKey struct {
	org     string
	watches map[*credentialWatch]struct{}
}

// credentialWatch implements contract.CredentialWatch.
type credentialWatch struct {
	reg  *watchRegistry // nil: detached (never fires)
	hash keystore.Hash
	done chan struct{}
	// changed signals a change of families (capacity 1); families is what
	// the watch last reported, under reg.mu (immutable when detached).
	changed  chan struct{}
	families string
	// reason is written once, under reg.mu, before done is closed; read only
	// after done is closed.
	reason string
	closed bool // under reg.mu (or owned by the caller when detached)
	once   sync.Once
}

func newWatchRegistry(gauge prometheus.Gauge) *watchRegistry {
	return &watchRegistry{
		gauge: gauge, kick: make(chan struct{}, 1),
		keys: make(map[keystore.Hash]*watchedKey), pending: make(map[keystore.Hash]struct{}),
	}
}

// add registers a watch of the key with hash h, of organization org, admitted
// with families. On a nil registry (an App built without one) the watch is
// detached: it only ends by Stop, and its families never change.
func (r *watchRegistry) add(h keystore.Hash, org, families string) *credentialWatch {
	w := &credentialWatch{reg: r, hash: h, done: make(chan struct{}), changed: make(chan struct{}, 1), families: families}
	if r == nil {
		return w
	}
	r.mu.Lock()
	k := r.keys[h]
	if k == nil {
		k = &watchedKey{org: org, watches: make(map[*credentialWatch]struct{})}
		r.keys[h] = k
	}
	k.watches[w] = struct{}{}
	r.mu.Unlock()
	r.gauge.Inc()
	return w
}

// Done implements contract.CredentialWatch.
func (w *credentialWatch) Done() <-chan struct{} { return w.done }

// Reason implements contract.CredentialWatch: the message the watch fired
// with, "" while it is open or when it ended by Stop.
func (w *credentialWatch) Reason() string {
	select {
	case <-w.done:
		return w.reason
	default:
		return ""
	}
}

// Changed implements contract.EntitlementWatch.
func (w *credentialWatch) Changed() <-chan struct{} { return w.changed }

// Families implements contract.EntitlementWatch: the families of the key's
// tier when the watch started, then as the last recheck found them.
func (w *credentialWatch) Families() string {
	if w.reg == nil {
		return w.families
	}
	w.reg.mu.Lock()
	defer w.reg.mu.Unlock()
	return w.families
}

// Stop implements contract.CredentialWatch: it unregisters the watch and
// closes Done (if the watch has not fired). It may be called any number of
// times.
func (w *credentialWatch) Stop() {
	r := w.reg
	if r == nil {
		w.once.Do(func() { close(w.done) })
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	close(w.done)
	k := r.keys[w.hash]
	if k == nil {
		return
	}
	if _, ok := k.watches[w]; ok {
		delete(k.watches, w)
		r.gauge.Dec()
	}
	if len(k.watches) == 0 {
		delete(r.keys, w.hash)
		delete(r.pending, w.hash)
	}
}

// fire ends every watch of h with reason and forgets h; it returns how many
// watches fired.
func (r *watchRegistry) fire(h keystore.Hash, reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[h]
	if k == nil {
		return 0
	}
	for w := range k.watches {
		w.reason = reason
		w.closed = true
		close(w.done)
	}
	n := len(k.watches)
	delete(r.keys, h)
	delete(r.pending, h)
	r.gauge.Sub(float64(n))
	return n
}

// refamily records that the key with hash h, still valid, now has families:
// every open watch of h that reported others takes them and is signalled. It
// returns how many watches were signalled.
func (r *watchRegistry) refamily(h keystore.Hash, families string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[h]
	if k == nil {
		return 0
	}
	n := 0
	for w := range k.watches {
		if w.families == families {
			continue
		}
		w.families = families
		n++
		select {
		case w.changed <- struct{}{}:
		default: // a signal is already pending: the reader reads Families after it
		}
	}
	return n
}

// notifyHash asks for a recheck of h, if it is watched.
func (r *watchRegistry) notifyHash(h keystore.Hash) {
	if r == nil {
		return
	}
	r.mu.Lock()
	_, watched := r.keys[h]
	if watched {
		r.pending[h] = struct{}{}
	}
	r.mu.Unlock()
	if watched {
		r.wake()
	}
}

// notifyOrg asks for a recheck of every watched key of organization org.
func (r *watchRegistry) notifyOrg(org string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	watched := false
	for h, k := range r.keys {
		if k.org == org {
			r.pending[h] = struct{}{}
			watched = true
		}
	}
	r.mu.Unlock()
	if watched {
		r.wake()
	}
}

// notifyAll asks for a recheck of every watched key (after a cache flush:
// notifications may have been missed).
func (r *watchRegistry) notifyAll() {
	if r == nil {
		return
	}
	r.mu.Lock()
	watched := len(r.keys) > 0
	r.pendingAll = watched
	r.mu.Unlock()
	if watched {
		r.wake()
	}
}

func (r *watchRegistry) wake() {
	select {
	case r.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// due returns the watched hashes to look up now and clears the pending
// notifications: every watched hash when all (the fallback tick) or after a
// flush, otherwise those notifications named.
func (r *watchRegistry) due(all bool) []keystore.Hash {
	r.mu.Lock()
	defer r.mu.Unlock()
	all = all || r.pendingAll
	r.pendingAll = false
	var hs []keystore.Hash
	if all {
		hs = make([]keystore.Hash, 0, len(r.keys))
		for h := range r.keys {
			hs = append(hs, h)
		}
	} else {
		hs = make([]keystore.Hash, 0, len(r.pending))
		for h := range r.pending {
			if _, ok := r.keys[h]; ok {
				hs = append(hs, h)
			}
		}
	}
	clear(r.pending)
	return hs
}

// size returns the number of live watches and of distinct watched keys.
func (r *watchRegistry) size() (watches, keys int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		watches += len(k.watches)
	}
	return watches, len(r.keys)
}

var (
	_ contract.Watcher          = (*resolvedKey)(nil)
	_ contract.CredentialWatch  = (*credentialWatch)(nil)
	_ contract.EntitlementWatch = (*credentialWatch)(nil)
)
