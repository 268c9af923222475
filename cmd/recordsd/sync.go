package main

import (
	"context"
	"os"

	"github.com/civicgate/civicgate/backend/mirror/command"
	"golang.org/x/term"
)

// runSync: recordsd sync <family> (--file PATH | --url BASE) [flags] — see backend/mirror/README.md.
func runSync(ctx context.Context, args []string) error {
	cfg, err := command.Parse(args)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return command.Run(ctx, pool, cfg, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}
