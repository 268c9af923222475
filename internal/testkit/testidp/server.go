package testidp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is an identity provider over real HTTP on 127.0.0.1: OpenID
// Connect discovery at /.well-known/openid-configuration naming the key set
// at /jwks, which publishes the keys of SetKeys with the Cache-Control of
// SetCacheControl (max-age=600 until then). Its methods are safe to call
// while a verifier fetches from it.
type Server struct {
	srv          *httptest.Server
	jwksFetches  atomic.Int64
	discoveries  atomic.Int64
	mu           sync.Mutex
	keys         []Key
	cacheControl string
}

// Start starts a server publishing keys and closes it when the test ends.
func Start(t testing.TB, keys ...Key) *Server {
	t.Helper()
	s := &Server{keys: slices.Clone(keys), cacheControl: "max-age=600"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		s.discoveries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": s.Issuer(), "jwks_uri": s.JWKSURL()})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		s.jwksFetches.Add(1)
		s.mu.Lock()
		set := make([]map[string]any, 0, len(s.keys))
		for _, k := range s.keys {
			set = append(set, k.JWK())
		}
		cacheControl := s.cacheControl
		s.mu.Unlock()
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// Issuer is http://127.0.0.1:PORT, the issuer discovery names (no trailing
// slash).
func (s *Server) Issuer() string { return s.srv.URL }

// JWKSURL is the key set's URL, as discovery names it.
func (s *Server) JWKSURL() string { return s.srv.URL + "/jwks" }

// Keys are the keys the key set publishes now.
func (s *Server) Keys() []Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// SetKeys makes the key set publish keys from the next fetch on: a rotation,
// a withdrawal.
func (s *Server) SetKeys(keys ...Key) {
	s.mu.Lock()
	s.keys = slices.Clone(keys)
	s.mu.Unlock()
}

// SetCacheControl sets the key set's Cache-Control header ("": none).
func (s *Server) SetCacheControl(v string) {
	s.mu.Lock()
	s.cacheControl = v
	s.mu.Unlock()
}

// JWKSFetches counts the requests for the key set so far.
func (s *Server) JWKSFetches() int64 { return s.jwksFetches.Load() }

// Discoveries counts the requests for the discovery document so far.
func (s *Server) Discoveries() int64 { return s.discoveries.Load() }

// Close takes the server down for good, an outage: from now on a fetch
// fails to connect. Closing twice is harmless.
func (s *Server) Close() { s.srv.Close() }
