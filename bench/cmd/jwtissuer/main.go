// Command jwtissuer is the benchmark's stand-in identity provider, and only
// that: it generates a signing key (RSA 2048 for RS256, or P-256 for ES256),
// serves OpenID discovery and the key set (with Cache-Control max-age) on a
// loopback address, and writes signed access tokens to files, one a line.
// The gateway under test verifies them with its real verifier
// (modules/auth/accesstoken, the civic_auth jwt block of docs/identity.md);
// the e2e tests use ORY Hydra as the provider, which a benchmark on a 2-core
// machine cannot afford beside the processes it measures.
//
//	jwtissuer --listen 127.0.0.1:18187 --audience https://api.civicgate.bench/v1 --plan bench --org bench \
//	          --subjects 8 --tokens 8 --out tokens.txt [--first-seen 6000 --first-seen-out once.txt]
//
// Every token has iss (http://<listen address>), aud, sub (bench-user-1 …
// bench-user-<subjects>, cycled), client_id, iat, exp (--ttl, 1 h), its own jti,
// plan (the tier claim) and org_id. --tokens are the warm set a load generator
// cycles through; --first-seen are more tokens over the same subjects for a
// measurement where every request brings a token never verified before.
// Token files are created with mode 0600 and written before discovery
// answers, so a caller may wait for the discovery document and then read
// them. Tokens are never printed to the log. The process serves until
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "jwtissuer:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	listen, alg                 string
	g                           grant
	subjects, tokens, firstSeen int
	out, firstSeenOut           string
	maxAge                      time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("jwtissuer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "loopback host:port to serve discovery and the key set on")
	fs.StringVar(&o.alg, "alg", "RS256", "signing algorithm: RS256 (RSA 2048) or ES256 (P-256)")
	fs.StringVar(&o.g.audience, "audience", "", "aud of every token (the jwt block's audience)")
	fs.StringVar(&o.g.plan, "plan", "bench", "the plan claim (a tier of the gateway's Caddyfile)")
	fs.StringVar(&o.g.org, "org", "bench", "the org_id claim")
	fs.DurationVar(&o.g.ttl, "ttl", time.Hour, "lifetime of every token (exp − iat)")
	fs.IntVar(&o.subjects, "subjects", 8, "distinct subjects, bench-user-1 … bench-user-N, cycled over the tokens")
	fs.IntVar(&o.tokens, "tokens", 8, "tokens written to --out")
	fs.StringVar(&o.out, "out", "", "file for the --tokens tokens, one a line (mode 0600); - for stdout")
	fs.IntVar(&o.firstSeen, "first-seen", 0, "more tokens, written to --first-seen-out")
	fs.StringVar(&o.firstSeenOut, "first-seen-out", "", "file for the --first-seen tokens (mode 0600)")
	fs.DurationVar(&o.maxAge, "jwks-max-age", time.Hour, "Cache-Control max-age of the key set")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() != 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.g.audience == "":
		return o, errors.New("--audience is required")
	case o.out == "":
		return o, errors.New("--out is required")
	case o.subjects < 1 || o.tokens < 1 || o.firstSeen < 0:
		return o, errors.New("--subjects and --tokens must be ≥ 1, --first-seen ≥ 0")
	case (o.firstSeen > 0) != (o.firstSeenOut != ""):
		return o, errors.New("--first-seen and --first-seen-out go together")
	case o.g.ttl <= 0 || o.maxAge < time.Second:
		return o, errors.New("--ttl must be positive and --jwks-max-age at least 1s")
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return o, fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return o, fmt.Errorf("--listen %q: a loopback IP address only (this is a bench stand-in, not an identity provider)", o.listen)
	}
	return o, nil
}

// run listens, signs and writes the tokens, then serves until ctx ends.
// ready, if not nil, receives the issuer URL once the tokens are written.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String()
	is, err := newIssuer(url, o.alg, o.maxAge)
	if err != nil {
		return err
	}
	subjects := make([]string, o.subjects)
	for i := range subjects {
		subjects[i] = "bench-user-" + strconv.Itoa(i+1)
	}
	t0 := time.Now()
	all, err := is.sign(o.g, subjects, o.tokens+o.firstSeen, t0)
	if err != nil {
		return err
	}
	signed := time.Since(t0)
	if err := writeTokens(o.out, all[:o.tokens]); err != nil {
		return err
	}
	if o.firstSeen > 0 {
		if err := writeTokens(o.firstSeenOut, all[o.tokens:]); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "jwtissuer: issuer %s, %s kid %s; signed %d tokens over %d subjects in %v (%.0f µs each, %d cores)\n",
		url, o.alg, is.kid, len(all), o.subjects, signed.Round(time.Millisecond),
		float64(signed.Microseconds())/float64(len(all)), runtime.GOMAXPROCS(0))
	srv := &http.Server{Handler: is.handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready <- url
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// writeTokens writes tokens one a line to path (mode 0600, by rename so a
// reader never sees half a file), or to stdout for "-".
func writeTokens(path string, tokens []string) error {
	body := strings.Join(tokens, "\n") + "\n"
	if path == "-" {
		_, err := io.WriteString(os.Stdout, body)
		if err != nil {
			return fmt.Errorf("write tokens: %w", err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tokens-*")
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(body); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	return nil
}
