package webhookcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/civicgate/civicgate/internal/clirun"
	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// The variables holding the key material, as the shipped Caddyfiles read
// them: the sealing key, and the old one during a rotation.
const (
	EnvSecretKey         = "CIVIC_WEBHOOK_SECRET_KEY"
	EnvPreviousSecretKey = "CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY"
)

// rekeyTimeout bounds a whole rekey (batches of endpoints, each its own transaction).
const rekeyTimeout = 30 * time.Minute

// box builds the secret box from the environment: CIVIC_WEBHOOK_SECRET_KEY
// seals, CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY (required when needPrevious)
// opens too. Errors name the variable, never its value.
func box(getenv func(string) string, needPrevious bool) (*secretbox.Box, error) {
	cur, prev := getenv(EnvSecretKey), getenv(EnvPreviousSecretKey)
	if cur == "" {
		return nil, fmt.Errorf("%s is not set (the key material that seals webhook secrets, ≥ %d bytes)", EnvSecretKey, secretbox.MinMaterial)
	}
	if needPrevious && prev == "" {
		return nil, fmt.Errorf("%s is not set (the old key material, which sealed the secrets until now)", EnvPreviousSecretKey)
	}
	materials := [][]byte{[]byte(cur)}
	for _, m := range []struct{ name, value string }{{EnvSecretKey, cur}, {EnvPreviousSecretKey, prev}} {
		if m.value != "" && len(m.value) < secretbox.MinMaterial {
			return nil, fmt.Errorf("%s is shorter than %d bytes", m.name, secretbox.MinMaterial)
		}
	}
	if prev != "" {
		materials = append(materials, []byte(prev))
	}
	return secretbox.New(materials...)
}

// checkKey is `civicgate webhooks check-key`: the key opens the canary (or,
// with no canary yet, one of the newest endpoint secrets, and the canary is
// created).
func checkKey(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	b, err := box(getenv, false)
	if err != nil {
		return err
	}
	return withPool(ctx, getenv, func(ctx context.Context, pool *pgxpool.Pool) error {
		if err := store.New(pool, b).CheckKey(ctx); err != nil {
			return keyError(err)
		}
		fmt.Fprintf(stdout, "%s opens this database's webhook key canary\n", EnvSecretKey)
		return nil
	})
}

// keyError words ErrWrongKey with what to do.
func keyError(err error) error {
	if errors.Is(err, store.ErrWrongKey) {
		return fmt.Errorf("%w: %s", err, store.WrongKeyHint)
	}
	return err
}

// rekey is `civicgate webhooks rekey`: re-seal everything with the new key.
func rekey(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("rekey", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	batch := fs.Int("batch", 500, "endpoints per transaction")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *batch < 1 || *batch > 10000 {
		return clirun.Usage("rekey takes only --batch N (1 to 10000)")
	}
	b, err := box(getenv, true)
	if err != nil {
		return err
	}
	return withPoolFor(ctx, rekeyTimeout, getenv, func(ctx context.Context, pool *pgxpool.Pool) error {
		res, err := store.New(pool, b).Rekey(ctx, *batch)
		if errors.Is(err, store.ErrCanaryUnopenable) {
			return fmt.Errorf("%w: neither %s nor %s holds the key material that sealed this database's webhook secrets; "+
				"nothing was re-sealed", err, EnvSecretKey, EnvPreviousSecretKey)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d endpoints, %d secrets re-sealed with %s; canary %s\n", res.Endpoints, res.Resealed, EnvSecretKey,
			map[bool]string{true: "re-sealed", false: "already sealed with it"}[res.Canary])
		if len(res.Unopenable) > 0 {
			fmt.Fprintf(stdout, "%d endpoints have a secret neither key opens (left as they are; they are set aside when claimed, "+
				"and rotating their secret brings them back): %v\n", len(res.Unopenable), res.Unopenable)
		}
		fmt.Fprintf(stdout, "when every instance runs with %s alone, %s can go\n", EnvSecretKey, EnvPreviousSecretKey)
		return nil
	})
}
