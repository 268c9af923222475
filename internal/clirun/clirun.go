// Package clirun is what the civicgate subcommands over the gateway's database
// (`civicgate keys`, `webhooks`, `console`, `audit`) share around their own
// flags: registration with Caddy's command line, the help and bare
// invocations, the exit codes and the pool over DATABASE_URL.
//
// Exit codes: 0 done, 1 refused or failed (the message says why), 2 usage.
package clirun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
)

// Func runs one subcommand with its arguments and environment and returns the
// process exit code; tests call it directly.
type Func func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int

// Cobra is the CobraFunc of a caddycmd.Command that runs run: the command
// parses its own flags (Cobra's parsing is off), and a non-zero code ends the
// process with that code.
func Cobra(run Func) func(*cobra.Command) {
	return func(cmd *cobra.Command) {
		cmd.DisableFlagParsing = true
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if code := run(c.Context(), args, os.Stdout, os.Stderr, os.Getenv); code != 0 {
				os.Exit(code)
			}
			return nil
		}
	}
}

// Help answers a bare invocation (usage on stderr, exit 2) and an explicit
// help, help, -h or --help (usage, exit 0); done is false for anything else.
func Help(args []string, stderr io.Writer, usage string) (code int, done bool) {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "help" {
		return 0, false
	}
	fmt.Fprint(stderr, usage)
	if len(args) == 0 {
		return 2, true
	}
	return 0, true
}

// ErrUsage marks a refusal of the command line: Exit answers it with the
// usage text and exit code 2. Wrap it (fmt.Errorf("%w: …", ErrUsage)) for a
// message that starts "bad usage: ", or use Usage for the message alone.
var ErrUsage = errors.New("bad usage")

// Usage is a refusal of the command line whose message is msg alone.
func Usage(msg string) error { return usageError(msg) }

type usageError string

func (e usageError) Error() string      { return string(e) }
func (usageError) Is(target error) bool { return target == ErrUsage }

// Exit reports err on stderr as "<name>: <err>" and returns the exit code:
// 0 without an error, 2 (followed by usage) for ErrUsage, 1 otherwise.
func Exit(stderr io.Writer, name string, err error, usage string) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s: %v\n%s", name, err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
}

// ErrNoDatabaseURL is OpenPool's error when DATABASE_URL is empty.
var ErrNoDatabaseURL = errors.New("DATABASE_URL is not set")

// OpenPool opens a pool over DATABASE_URL (connections are made on first
// use). A DSN that does not parse is reported without echoing it: it may hold
// a password.
func OpenPool(ctx context.Context, getenv func(string) string) (*pgxpool.Pool, error) {
	dsn := getenv("DATABASE_URL")
	if dsn == "" {
		return nil, ErrNoDatabaseURL
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, errors.New("cannot parse DATABASE_URL")
	}
	return pool, nil
}
