package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RekeyResult says what Rekey did.
type RekeyResult struct {
	Endpoints int // endpoints looked at
	Resealed  int // secrets (current and previous) re-sealed with the sealing key
	// Unopenable lists the endpoints with a secret no key opens: left as they
	// are (the claim sets them aside; rotating the secret is the way out).
	Unopenable []string
	// Canary: the canary was re-sealed (false when the sealing key had sealed it already).
	Canary bool
}

// ErrCanaryUnopenable is Rekey's refusal when no key of the box opens the
// canary: the old key given is not the one that sealed this database.
var ErrCanaryUnopenable = errors.New("neither key opens this database's key canary")

// Rekey re-seals with the box's sealing (first) key every endpoint secret,
// current and previous, that another of its keys sealed, batch endpoints per
// transaction (rows locked, so it is safe beside running gateways), then the
// canary — last, so that a canary sealed with the new key means every secret
// is. Values the sealing key sealed already are left alone: a rerun after an
// interruption does only what is left (docs/design.md D39).
func (s *Store) Rekey(ctx context.Context, batch int) (RekeyResult, error) {
	var res RekeyResult
	if batch <= 0 {
		batch = 500
	}
	if err := s.CheckKey(ctx); errors.Is(err, ErrWrongKey) {
		return res, ErrCanaryUnopenable
	} else if err != nil {
		return res, err
	}
	after := ""
	for {
		n, last, err := s.rekeyBatch(ctx, after, batch, &res)
		if err != nil {
			return res, err
		}
		if n < batch {
			break
		}
		after = last
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sealed, err := readCanary(ctx, tx)
		if err != nil {
			return err
		}
		_, idx, err := s.box.OpenIndex(sealed, []byte(canaryAD))
		if err != nil {
			return ErrCanaryUnopenable
		}
		if idx == 0 {
			return nil
		}
		fresh, err := s.box.Seal([]byte(canaryPlaintext), []byte(canaryAD))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_key_canary SET sealed = $1, resealed_at = clock_timestamp()`, fresh); err != nil {
			return fmt.Errorf("store: rekey canary: %w", err)
		}
		res.Canary = true
		return nil
	})
	return res, err
}

// rekeyBatch re-seals the endpoints after id after (at most batch) and
// returns how many it read and the last id.
func (s *Store) rekeyBatch(ctx context.Context, after string, batch int, res *RekeyResult) (int, string, error) {
	var n int
	var last string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, secret_sealed, prev_secret_sealed FROM civicgate.webhook_endpoints
			WHERE id > $1 ORDER BY id LIMIT $2 FOR UPDATE`, after, batch)
		if err != nil {
			return fmt.Errorf("store: rekey: %w", err)
		}
		type update struct {
			id        string
			cur, prev []byte
		}
		var updates []update
		for rows.Next() {
			var u update
			if err := rows.Scan(&u.id, &u.cur, &u.prev); err != nil {
				rows.Close()
				return fmt.Errorf("store: rekey: %w", err)
			}
			n++
			last = u.id
			curNew, curOK, curChanged, err := s.reseal(u.id, u.cur)
			if err != nil {
				rows.Close()
				return err
			}
			prevNew, prevOK, prevChanged := u.prev, true, false
			if u.prev != nil {
				if prevNew, prevOK, prevChanged, err = s.reseal(u.id, u.prev); err != nil {
					rows.Close()
					return err
				}
			}
			if !curOK || !prevOK {
				res.Unopenable = append(res.Unopenable, u.id)
			}
			if curChanged || prevChanged {
				updates = append(updates, update{u.id, curNew, prevNew})
				res.Resealed += btoi(curChanged) + btoi(prevChanged)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: rekey: %w", err)
		}
		for _, u := range updates {
			if _, err := tx.Exec(ctx, `UPDATE civicgate.webhook_endpoints SET secret_sealed = $2, prev_secret_sealed = $3,
				sealed_at = clock_timestamp() WHERE id = $1`, u.id, u.cur, u.prev); err != nil {
				return fmt.Errorf("store: rekey %s: %w", u.id, err)
			}
		}
		return nil
	})
	if err == nil {
		res.Endpoints += n
	}
	return n, last, err
}

// reseal returns sealed re-sealed with the sealing key when an older key
// opens it (changed), as it is when the sealing key does, and ok=false when
// no key does.
func (s *Store) reseal(id string, sealed []byte) (out []byte, ok, changed bool, err error) {
	plain, idx, err := s.box.OpenIndex(sealed, []byte(id))
	if err != nil {
		return sealed, false, false, nil
	}
	if idx == 0 {
		return sealed, true, false, nil
	}
	fresh, err := s.box.Seal(plain, []byte(id))
	if err != nil {
		return nil, false, false, err
	}
	return fresh, true, true, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
