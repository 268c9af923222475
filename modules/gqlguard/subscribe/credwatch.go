package subscribe

import (
	"reflect"
	"sync"

	"github.com/civicgate/civicgate/modules/contract"
	"github.com/civicgate/civicgate/modules/gqlguard/subscribe/wsproxy"
)

// CredentialWatches shares one contract.CredentialWatch (and the one
// goroutine waiting on it) among the terminated sockets opened with the
// same credential, so an idle socket has no goroutine of its own for it.
type CredentialWatches struct {
	mu sync.Mutex
	m  map[contract.Watcher]*sharedWatch
}

// NewCredentialWatches returns an empty set of shared watches.
func NewCredentialWatches() *CredentialWatches {
	return &CredentialWatches{m: make(map[contract.Watcher]*sharedWatch)}
}

// Of returns what a socket of w's credential follows.
func (cw *CredentialWatches) Of(w contract.Watcher) wsproxy.Revocations {
	return watchedCredential{cw: cw, w: w}
}

type watchedCredential struct {
	cw *CredentialWatches
	w  contract.Watcher
}

// sharedWatch is one credential's watch and the sockets following it.
type sharedWatch struct {
	watch contract.CredentialWatch
	ends  map[*func(string)]struct{}
}

// Follow calls end with the reason once the credential stops being valid.
func (wc watchedCredential) Follow(end func(reason string)) func() {
	if !reflect.TypeOf(wc.w).Comparable() {
		return followAlone(wc.w.WatchCredential(), end)
	}
	cw := wc.cw
	cw.mu.Lock()
	sw := cw.m[wc.w]
	if sw == nil {
		sw = &sharedWatch{watch: wc.w.WatchCredential(), ends: make(map[*func(string)]struct{})}
		cw.m[wc.w] = sw
		go cw.wait(wc.w, sw)
	}
	key := &end
	sw.ends[key] = struct{}{}
	cw.mu.Unlock()
	return func() {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		if _, ok := sw.ends[key]; !ok {
			return
		}
		delete(sw.ends, key)
		if len(sw.ends) == 0 && cw.m[wc.w] == sw {
			delete(cw.m, wc.w)
			sw.watch.Stop() // wait returns
		}
	}
}

// wait tells every follower once the watch fires (or was stopped).
func (cw *CredentialWatches) wait(w contract.Watcher, sw *sharedWatch) {
	<-sw.watch.Done()
	reason := sw.watch.Reason()
	cw.mu.Lock()
	if cw.m[w] == sw {
		delete(cw.m, w)
	}
	ends := make([]func(string), 0, len(sw.ends))
	for e := range sw.ends {
		ends = append(ends, *e)
	}
	clear(sw.ends)
	cw.mu.Unlock()
	sw.watch.Stop()
	if reason == "" {
		return
	}
	for _, end := range ends {
		end(reason)
	}
}

// followAlone is Follow for a Watcher that cannot be a map key.
func followAlone(watch contract.CredentialWatch, end func(string)) func() {
	stopped := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case <-watch.Done():
			if reason := watch.Reason(); reason != "" {
				end(reason)
			}
		case <-stopped:
		}
	}()
	return func() {
		once.Do(func() {
			close(stopped)
			watch.Stop()
		})
	}
}
