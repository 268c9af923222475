// Command libraryd serves the example library GraphQL engine
// (examples/other-backend/library) on POST/GET/SSE/WebSocket /graphql, for
// running civicgate in front of it by hand (examples/other-backend/README.md).
//
//	libraryd [--listen 127.0.0.1:4000]
//	libraryd --help
//
// Environment:
//
//	LIBRARY_LISTEN           address to listen on (default 127.0.0.1:4000; --listen wins)
//	CIVIC_IDENTITY_SECRET    when set, every request must carry a valid
//	                         X-Civic-Identity signed with it (the gateway's)
//
// The default ports of the example (libraryd 4000, the gateway 4080, its admin
// endpoint 4019) are none of `make up`'s (8080, 8443, 8444, 2019, 8081), so both
// run side by side.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/civicgate/civicgate/examples/other-backend/library"
)

// defaultListen is libraryd's address unless LIBRARY_LISTEN or --listen says otherwise.
const defaultListen = "127.0.0.1:4000"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args and serves until SIGINT/SIGTERM; it returns the exit status: 0 after --help or a clean
// shutdown, 2 for bad arguments, 1 when serving fails.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("libraryd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", cmp.Or(os.Getenv("LIBRARY_LISTEN"), defaultListen), "address to listen on (env LIBRARY_LISTEN)")
	fs.Usage = func() { usage(fs.Output(), fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs) // asked for: on stdout, and success
			return 0
		}
		return 2 // the flag package has printed the error and the usage on stderr
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "libraryd: unexpected argument %q\n", fs.Arg(0))
		usage(stderr, fs)
		return 2
	}
	if err := serve(*listen); err != nil {
		fmt.Fprintf(stderr, "libraryd: %v\n", err)
		return 1
	}
	return 0
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `usage: libraryd [--listen ADDR]

Serves the example library GraphQL engine on /graphql (POST, GET, graphql-sse,
graphql-transport-ws), for civicgate to front (examples/other-backend/README.md).

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, `
Environment:
  LIBRARY_LISTEN          address to listen on (default %s)
  CIVIC_IDENTITY_SECRET   when set, every request must carry a valid X-Civic-Identity
                          signed with it (the gateway's identity_secret)
`, defaultListen)
}

func serve(addr string) error {
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
