// Command libraryd serves the example library GraphQL engine
// (examples/other-backend/library) on POST/GET/SSE/WebSocket /graphql, for
// running civicgate in front of it by hand (examples/other-backend/README.md).
//
// Environment:
//
//	LIBRARY_LISTEN           address to listen on (default 127.0.0.1:4000)
//	CIVIC_IDENTITY_SECRET    when set, every request must carry a valid
//	                         X-Civic-Identity signed with it (the gateway's)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("libraryd: %v", err)
	}
}

func run() error {
	addr := os.Getenv("LIBRARY_LISTEN")
	if addr == "" {
		addr = "127.0.0.1:4000"
	}
	var opts library.Options
	if s := os.Getenv("CIVIC_IDENTITY_SECRET"); s != "" {
		opts.IdentitySecret = []byte(s)
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", library.NewHandler(library.NewCatalog(), library.NewLoanEvents(), opts))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("libraryd: serving /graphql on %s", addr)
	select {
	case err := <-errc:
		return fmt.Errorf("listen on %s: %w", addr, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
