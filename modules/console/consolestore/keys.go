package consolestore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Key is one row of the keys page: never the key or its hash.
type Key struct {
	ID           string
	Env          string
	Tier         string
	Prefix       string
	Status       string // effective: a rotating key past its overlap is rotated
	CreatedAt    time.Time
	RetiredAt    *time.Time
	RotatesOutAt *time.Time
	LastUsed     *time.Time // the last minute (or, past 48 h, hour) with counted usage
	// The key's lifecycle (keystore.Lifecycle; KeysPage only): its expiry
	// (nil: none), name and labels.
	ExpiresAt *time.Time
	Name      string
	Labels    map[string]string
}

// LabelList is k's labels as key=value in key order, as the keys page
// shows them (a value may hold a comma: one string per label).
func (k Key) LabelList() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(k.Labels)) {
		out = append(out, name+"="+k.Labels[name])
	}
	return out
}

// KeyCursor is where a keys page starts: after the key created at
// CreatedAt with id ID (zero: the newest).
type KeyCursor struct {
	CreatedAt time.Time
	ID        string
}

// KeysPage returns the organization's keys newest first, live ones (active,
// rotating) first on the first page, limit per page, with a cursor for the
// next page (nil at the end). Last use comes from the usage tables through
// their primary key, one index probe per key on the page.
func KeysPage(ctx context.Context, pool *pgxpool.Pool, orgID string, after KeyCursor, limit int) ([]Key, *KeyCursor, error) {
	// Two plain conditions rather than one with an OR, so the planner walks
	// the (org_id, created_at DESC, id DESC) index and stops after a page.
	page := `$2::text = '' AND $3::timestamptz IS NOT NULL`
	if after.ID != "" {
		page = `(k.created_at, k.id) < ($3, $2)`
	}
	rows, err := pool.Query(ctx, `SELECT k.id, k.env, k.tier, k.key_prefix,
			CASE WHEN k.status = 'rotating' AND k.rotates_out_at <= now() THEN 'rotated'
				WHEN k.status IN ('active','rotating') AND k.expires_at <= now() THEN 'expired' ELSE k.status END,
			k.created_at, coalesce(k.retired_at, CASE WHEN k.status = 'rotating' AND k.rotates_out_at <= now() THEN k.rotates_out_at END),
			k.rotates_out_at,
			coalesce((SELECT max(m.start) FROM civicgate.usage_minute m WHERE m.key_id = k.id),
				(SELECT max(h.start) FROM civicgate.usage_hour h WHERE h.key_id = k.id)),
			k.expires_at, k.name, k.labels
		FROM civicgate.api_keys k
		WHERE k.org_id = $1 AND `+page+`
		ORDER BY k.created_at DESC, k.id DESC LIMIT $4`, orgID, after.ID, after.CreatedAt, limit+1)
	if err != nil {
		return nil, nil, fmt.Errorf("consolestore: keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		err := r.Scan(&k.ID, &k.Env, &k.Tier, &k.Prefix, &k.Status, &k.CreatedAt, &k.RetiredAt, &k.RotatesOutAt, &k.LastUsed,
			&k.ExpiresAt, &k.Name, &k.Labels)
		k.CreatedAt = k.CreatedAt.UTC()
		return k, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("consolestore: keys: %w", err)
	}
	var next *KeyCursor
	if len(keys) > limit {
		keys = keys[:limit]
		last := keys[limit-1]
		next = &KeyCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return keys, next, nil
}

// LiveKeys returns the organization's active and rotating keys, oldest
// first (at most two per environment).
func LiveKeys(ctx context.Context, pool *pgxpool.Pool, orgID string) ([]Key, error) {
	rows, err := pool.Query(ctx, `SELECT k.id, k.env, k.tier, k.key_prefix, k.status, k.created_at, k.rotates_out_at
		FROM civicgate.api_keys k
		WHERE k.org_id = $1 AND `+usableKey+`
		ORDER BY k.created_at, k.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("consolestore: live keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("consolestore: live keys: %w", err)
	}
	return keys, nil
}

// scanKey reads a row of id, env, tier, key_prefix, status, created_at,
// rotates_out_at (LiveKeys, UsageKeys).
func scanKey(r pgx.CollectableRow) (Key, error) {
	var k Key
	err := r.Scan(&k.ID, &k.Env, &k.Tier, &k.Prefix, &k.Status, &k.CreatedAt, &k.RotatesOutAt)
	k.CreatedAt = k.CreatedAt.UTC()
	return k, err
}

// UsageKeys returns the keys the usage page offers for [from, to): every
// key of the organization with usage in the period — revoked and rotated
// ones too, which may hold most of it — and its live keys, the most used
// first, at most limit. Status is the effective one, as KeysPage's.
func UsageKeys(ctx context.Context, pool *pgxpool.Pool, orgID string, from, to time.Time, limit int) ([]Key, error) {
	rows, err := pool.Query(ctx, `WITH used AS (
			SELECT key_id, sum(admitted) + sum(refused) AS n FROM civicgate.usage_hour
			WHERE org_id = $1 AND start >= $2 AND start < $3 GROUP BY key_id)
		SELECT k.id, k.env, k.tier, k.key_prefix,
			CASE WHEN k.status = 'rotating' AND k.rotates_out_at <= now() THEN 'rotated' ELSE k.status END,
			k.created_at, k.rotates_out_at
		FROM civicgate.api_keys k LEFT JOIN used u ON u.key_id = k.id
		WHERE k.org_id = $1 AND (u.key_id IS NOT NULL OR k.status = 'active' OR (k.status = 'rotating' AND k.rotates_out_at > now()))
		ORDER BY coalesce(u.n, 0) DESC, k.created_at DESC, k.id LIMIT $4`, orgID, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage keys: %w", err)
	}
	return keys, nil
}

// TokenSubjectPrefix starts the key_id of usage made with an access token
// (accesstoken.Identity.KeyID: jwt:sub:… or jwt:hash:…); API key ids start
// with key_, so the two never collide.
const TokenSubjectPrefix = "jwt:"

// UsageTokenSubject is an access-token subject with usage in a period: its
// key_id as usage rows hold it and its requests in the period.
type UsageTokenSubject struct {
	ID       string
	Requests int64
}

// UsageTokenSubjects returns the access-token subjects of organization orgID
// with usage in [from, to), the most used first (at most limit). Tokens are
// not stored, so their usage rows are all the console knows of them.
func UsageTokenSubjects(ctx context.Context, pool *pgxpool.Pool, orgID string, from, to time.Time, limit int) ([]UsageTokenSubject, error) {
	rows, err := pool.Query(ctx, `SELECT key_id, sum(admitted) + sum(refused) AS n FROM civicgate.usage_hour
		WHERE org_id = $1 AND start >= $2 AND start < $3 AND starts_with(key_id, $4)
		GROUP BY key_id ORDER BY n DESC, key_id LIMIT $5`, orgID, from, to, TokenSubjectPrefix, limit)
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage token subjects: %w", err)
	}
	subjects, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (UsageTokenSubject, error) {
		var s UsageTokenSubject
		return s, r.Scan(&s.ID, &s.Requests)
	})
	if err != nil {
		return nil, fmt.Errorf("consolestore: usage token subjects: %w", err)
	}
	return subjects, nil
}

// TokenSubjectUsedBy reports whether access-token subject id (a key_id with
// TokenSubjectPrefix) has any usage row of organization orgID: the usage page
// shows a subject only to the organization it was counted for.
func TokenSubjectUsedBy(ctx context.Context, pool *pgxpool.Pool, id, orgID string) (bool, error) {
	var found bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM civicgate.usage_hour WHERE key_id = $1 AND org_id = $2)`, id, orgID).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("consolestore: token subject usage: %w", err)
	}
	return found, nil
}
