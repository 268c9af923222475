package main

// SEED HOOK: the seed engineer replaces this file. Contract:
//
//	func runSeed(ctx context.Context, args []string) error
//
// args are the flags after "seed" (e.g. --scale small|medium|1m); DATABASE_URL names the database
// (use openPool(ctx) from serve.go; run migrations.Apply first if the tables may be missing).

import (
	"context"
	"errors"
)

func runSeed(ctx context.Context, args []string) error {
	return errors.New("seed is not implemented yet (backend/seed)")
}
