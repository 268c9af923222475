package httpapi

import "net/http"

// RootFamily exposes rootFamily to the external tests.
func RootFamily(field string) string {
	f, _ := rootFamily(field)
	return f
}

// Traced exposes the tracing middleware (Server.traced) to the external benchmarks.
func Traced(cfg Config, h http.Handler) http.Handler {
	s := &Server{cfg: cfg}
	return s.traced(h)
}

// Measured exposes the metrics middleware (Server.measured) to the external benchmarks.
func (s *Server) Measured(h http.Handler) http.Handler { return s.measured(h) }
