package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The key canary (docs/design.md D39): a known value sealed with the key
// material in civicgate.webhook_key_canary. A process whose key cannot open
// it holds the wrong key for this database and must neither seal nor claim.
const (
	canaryPlaintext = "civicgate webhook sealing key canary v1"
	canaryAD        = "civicgate.webhook_key_canary"
	// canaryProbe is how many of the newest endpoint secrets a missing canary
	// is created from: the key must open at least one of them.
	canaryProbe = 50
)

// ErrWrongKey is returned when the sealing key cannot open the database's key
// canary (or, when there is no canary yet, any of the newest endpoint
// secrets): the process holds another key than the one that sealed this
// database's webhook secrets.
var ErrWrongKey = errors.New("the webhook sealing key cannot open this database's key canary")

// WrongKeyHint says what to do about ErrWrongKey, naming where the key comes
// from (the app and the CLI word it alike).
const WrongKeyHint = "CIVIC_WEBHOOK_SECRET_KEY (the civic_webhooks secret_key option) is not the key material that sealed " +
	"this database's webhook secrets: restore the value that sealed them, or re-seal them with the new value: " +
	"CIVIC_WEBHOOK_SECRET_KEY=<new> CIVIC_WEBHOOK_PREVIOUS_SECRET_KEY=<old> civicgate webhooks rekey " +
	"(docs/operations.md, \"Webhooks\")"

// CheckKey verifies that the store's key opens the database's key canary,
// creating the canary when there is none (only if the key opens one of the
// newest endpoint secrets, or there are none). It returns ErrWrongKey when
// the key is not this database's; any other error means the check could not
// run (database away, tables missing) and says nothing about the key.
func (s *Store) CheckKey(ctx context.Context) error {
	var checkedAt time.Time
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&checkedAt); err != nil {
			return fmt.Errorf("store: key canary: %w", err)
		}
		sealed, err := readCanary(ctx, tx)
		if err != nil {
			return err
		}
		if sealed != nil {
			if _, err := s.box.Open(sealed, []byte(canaryAD)); err != nil {
				return ErrWrongKey
			}
			return nil
		}
		return s.createCanary(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.keyCheckedAt.Store(checkedAt.UnixNano())
	return nil
}

// readCanary returns the sealed canary (nil when there is none), locking the
// table against a concurrent creation.
func readCanary(ctx context.Context, tx pgx.Tx) ([]byte, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('civicgate.webhook_key_canary'))`); err != nil {
		return nil, fmt.Errorf("store: key canary: %w", err)
	}
	var sealed []byte
	err := tx.QueryRow(ctx, `SELECT sealed FROM civicgate.webhook_key_canary`).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: key canary: %w", err)
	}
	if sealed == nil {
		sealed = []byte{} // present but empty: opens with no key
	}
	return sealed, nil
}

// createCanary seals the canary with the store's key, refusing when
// endpoints exist and the key opens none of the newest (a database whose
// secrets another key sealed before the canary existed).
func (s *Store) createCanary(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT id, secret_sealed FROM civicgate.webhook_endpoints ORDER BY sealed_at DESC, id LIMIT $1`, canaryProbe)
	if err != nil {
		return fmt.Errorf("store: key canary: %w", err)
	}
	var tried, opened int
	for rows.Next() {
		var id string
		var sealed []byte
		if err := rows.Scan(&id, &sealed); err != nil {
			rows.Close()
			return fmt.Errorf("store: key canary: %w", err)
		}
		tried++
		if _, err := s.box.Open(sealed, []byte(id)); err == nil {
			opened++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: key canary: %w", err)
	}
	if tried > 0 && opened == 0 {
		return fmt.Errorf("%w (there is no canary yet, and the key opens none of the %d newest endpoint secrets)", ErrWrongKey, tried)
	}
	sealed, err := s.box.Seal([]byte(canaryPlaintext), []byte(canaryAD))
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO civicgate.webhook_key_canary (sealed) VALUES ($1)`, sealed); err != nil {
		return fmt.Errorf("store: key canary: %w", err)
	}
	return nil
}

// ensureKey checks the key once per store before the first seal or claim
// (a process that started while the database was away has not yet).
func (s *Store) ensureKey(ctx context.Context) error {
	if s.keyCheckedAt.Load() != 0 {
		return nil
	}
	return s.CheckKey(ctx)
}

// keyChecked is when (database clock) the key last opened the canary.
func (s *Store) keyChecked() time.Time {
	return time.Unix(0, s.keyCheckedAt.Load())
}
