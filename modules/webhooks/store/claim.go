package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/civicgate/civicgate/modules/webhooks/secretbox"
)

// Job is one claimed delivery attempt.
type Job struct {
	DeliveryID int64
	Token      string // lease token: Finish must present it
	EndpointID string
	URL        string
	Keys       [][]byte // signing keys, newest first
	Kind       string   // event, replay, test or notice
	EventID    string   // webhook-id
	Attempt    int      // 1-based number of this attempt
	Body       []byte
	Seq        int64  // change_events.id (0 for a ping)
	Family     string // "" for a ping
	// Traceparent is the change event's writer span (W3C traceparent; "" if none or not read: see
	// Store.ReadTraceparents), which the delivery span links to.
	Traceparent string
}

// ClaimParams bounds one Claim.
type ClaimParams struct {
	// Lease is how long the claimed attempts are this instance's.
	Lease time.Duration
	// MaxInFlight bounds the attempts in flight per endpoint, across every
	// instance.
	MaxInFlight int
	// MaxInFlightPerOrg bounds the attempts in flight per organization,
	// across every instance.
	MaxInFlightPerOrg int
	// Limit bounds the attempts this claim returns (the free workers).
	Limit int
	// Tiers decides what each organization is entitled to.
	Tiers Tiers
	// CheckURL, if set, is the egress URL rule of this instance: an endpoint
	// whose stored URL it refuses is set aside (ReasonURL).
	CheckURL func(url string) error
	// SetAside, if set, is told (after the claim commits) of every endpoint
	// the claim set aside or deferred.
	SetAside func(SetAside)
}

// claimRounds bounds the claim transactions one Claim runs: a round that
// sets endpoints aside returns fewer attempts than were free, so the claim
// goes on for the rest.
const claimRounds = 3

// claimLockClass is the first key of the per-organization advisory lock
// claimers hold (the second is hashtext(org_id)).
const claimLockClass = `hashtext('civicgate.webhook_claim')`

// claimOrgs picks the organizations this claim works for (at most limit): the
// ones with due deliveries and fewer than the per-organization bound in
// flight, those with the fewest in flight first (then the oldest due work),
// and locks each of them for the transaction with a try-lock, skipping the
// ones another instance is claiming for right now.
const claimOrgs = `SELECT c.org_id FROM (
		SELECT g.org_id FROM (
			SELECT e.org_id, min(due.next_attempt_at) AS first
			FROM civicgate.webhook_endpoints e
			CROSS JOIN LATERAL (SELECT x.next_attempt_at FROM civicgate.webhook_deliveries x
				WHERE x.endpoint_id = e.id AND x.status IN ('pending', 'delivering') AND x.next_attempt_at <= $1
				  AND (x.status = 'pending' OR x.lease_until <= $1) AND (e.status = 'active' OR x.kind = 'test')
				ORDER BY x.next_attempt_at LIMIT 1) due
			GROUP BY e.org_id) g
		CROSS JOIN LATERAL (SELECT count(*) AS n FROM civicgate.webhook_endpoints y
			JOIN civicgate.webhook_deliveries x ON x.endpoint_id = y.id
			WHERE y.org_id = g.org_id AND x.status = 'delivering' AND x.lease_until > $1) busy
		WHERE busy.n < $3
		ORDER BY busy.n, g.first, g.org_id
		LIMIT $2) c
	WHERE pg_try_advisory_xact_lock(` + claimLockClass + `, hashtext(c.org_id))`

// claimStatement decides and claims in one statement, for the organizations in $1
// (locked by this transaction), with the key store as it is now ($3 = the tier
// map): deliveries of an organization that may not receive are parked, those
// of a family it lost are cancelled, and of the rest the due ones are claimed
// round-robin across organizations (each organization's k-th due delivery,
// counting its attempts already in flight, before anyone's (k+1)-th), never
// more than $4 in flight per endpoint nor $5 per organization, at most $6.
func claimStatement() string {
	return `WITH ent AS (` + endpointState("$3", "e.org_id = ANY($1)") + `),
	inflight AS (
		SELECT x.endpoint_id, count(*) AS n FROM civicgate.webhook_deliveries x
		WHERE x.endpoint_id IN (SELECT id FROM ent) AND x.status = 'delivering' AND x.lease_until > $2
		GROUP BY x.endpoint_id),
	busy AS (
		SELECT ent.org_id, coalesce(sum(i.n), 0) AS n FROM ent LEFT JOIN inflight i ON i.endpoint_id = ent.id
		GROUP BY ent.org_id),
	parked AS (` + parkSQL("$2") + `),
	cancelled AS (` + cancelSQL("$2") + `),
	cand AS (
		SELECT c.id, ent.org_id, c.next_attempt_at, c.status, c.stored, c.family,
			(c.kind = 'test' OR c.family IS NULL OR c.family = ANY(ent.fams)) AS entitled
		FROM ent LEFT JOIN inflight i ON i.endpoint_id = ent.id
		CROSS JOIN LATERAL (
			SELECT x.id, x.next_attempt_at, x.status, x.kind, x.family AS stored,
				coalesce(x.family, (SELECT ce.family FROM change_events ce WHERE ce.id = x.event_seq)) AS family
			FROM civicgate.webhook_deliveries x
			WHERE x.endpoint_id = ent.id AND x.status IN ('pending', 'delivering') AND x.next_attempt_at <= $2
			  AND (x.status = 'pending' OR x.lease_until <= $2) AND (ent.status = 'active' OR x.kind = 'test')
			ORDER BY x.next_attempt_at, x.id
			LIMIT greatest(0, $4 - coalesce(i.n, 0))
			FOR UPDATE OF x SKIP LOCKED) c
		WHERE ent.park_reason IS NULL),
	dropped AS (
		UPDATE civicgate.webhook_deliveries d
		SET status = 'cancelled', last_error = '` + ReasonNotEntitled + `' || cand.family, finished_at = $2,
			lease_token = NULL, lease_until = NULL
		FROM cand WHERE d.id = cand.id AND NOT cand.entitled AND (cand.status = 'delivering' OR cand.stored IS NULL)
		RETURNING d.id),
	ranked AS (
		SELECT cand.id, cand.org_id, cand.next_attempt_at,
			row_number() OVER (PARTITION BY cand.org_id ORDER BY cand.next_attempt_at, cand.id) AS org_rank
		FROM cand WHERE cand.entitled),
	pick AS (
		SELECT r.id FROM ranked r JOIN busy b ON b.org_id = r.org_id
		WHERE r.org_rank <= $5 - b.n
		ORDER BY b.n + r.org_rank, r.next_attempt_at, r.id
		LIMIT $6),
	claimed AS (
		UPDATE civicgate.webhook_deliveries d
		SET status = 'delivering', attempts = d.attempts + 1, lease_token = gen_random_uuid(), lease_until = $7
		FROM pick WHERE d.id = pick.id
		RETURNING d.id, d.endpoint_id, d.lease_token::text AS token, d.kind, d.event_id::text AS event_id,
			d.event_seq, d.payload, d.attempts)
	SELECT c.id, c.token, c.endpoint_id, ent.url, ent.secret_sealed, ent.prev_secret_sealed, ent.prev_secret_until,
		ent.sealed_at, c.kind, c.event_id, c.event_seq, c.payload, c.attempts
	FROM claimed c JOIN ent ON ent.id = c.endpoint_id
	ORDER BY c.id`
}

// Claim leases up to p.Limit due deliveries for this instance until
// now+p.Lease, deciding with the key store as it is when the claim runs
// (see claimStatement): a delivery of a suspended organization (or one with no
// active key) is parked, never claimed; one of a family the organization is
// no longer entitled to is cancelled. Organizations are served round-robin,
// the least busy first, with at most p.MaxInFlightPerOrg attempts in flight
// each and p.MaxInFlight per endpoint, across all instances: a claimer works
// for an organization only while holding its advisory lock (try-lock: another
// instance claiming for it is skipped, never waited for), and counts what is
// in flight after taking it. A delivering row whose lease ran out (its
// instance died) is due again. Claiming counts the attempt.
//
// An endpoint that cannot be used — its secret does not open, its URL is
// refused by p.CheckURL — is set aside in the same transaction (setAside),
// and every other endpoint's attempts are claimed as usual (docs/design.md
// D39). The key is checked against the canary before the first claim.
func (s *Store) Claim(ctx context.Context, now time.Time, p ClaimParams, render func(Event) ([]byte, error)) ([]Job, error) {
	tp, err := p.Tiers.param()
	if err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	if p.MaxInFlight <= 0 || p.MaxInFlightPerOrg <= 0 {
		return nil, errors.New("store: claim: the in-flight bounds must be positive")
	}
	if err := s.ensureKey(ctx); err != nil {
		return nil, err
	}
	var jobs []Job
	for round := range claimRounds {
		got, aside, err := s.claimRound(ctx, now, p, tp, p.Limit-len(jobs))
		if err != nil {
			if round == 0 {
				return nil, err
			}
			break // the attempts of the earlier rounds are leased: hand them out; the next claim meets the error again
		}
		jobs = append(jobs, got...)
		if p.SetAside != nil {
			for _, u := range aside {
				p.SetAside(u)
			}
		}
		if len(aside) == 0 || len(jobs) >= p.Limit {
			break
		}
	}
	return s.render(ctx, jobs, render)
}

// claimed is a row of claimStatement: a job and its endpoint's sealed secrets.
type claimed struct {
	job       Job
	cur, prev []byte
	prevUntil *time.Time
	sealedAt  time.Time
}

// claimRound is one claim transaction: it returns the usable endpoints' jobs
// (keys opened, bodies not yet rendered) and the endpoints set aside.
func (s *Store) claimRound(ctx context.Context, now time.Time, p ClaimParams, tp string, limit int) ([]Job, []SetAside, error) {
	var jobs []Job
	var aside []SetAside
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		jobs, aside = nil, nil
		rows, err := tx.Query(ctx, claimOrgs, now, limit, p.MaxInFlightPerOrg)
		if err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		orgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		if len(orgs) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, claimStatement(), orgs, now, tp, p.MaxInFlight, p.MaxInFlightPerOrg, limit, now.Add(p.Lease))
		if err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		var got []claimed
		for rows.Next() {
			var c claimed
			var seq *int64
			j := &c.job
			if err := rows.Scan(&j.DeliveryID, &j.Token, &j.EndpointID, &j.URL, &c.cur, &c.prev, &c.prevUntil, &c.sealedAt,
				&j.Kind, &j.EventID, &seq, &j.Body, &j.Attempt); err != nil {
				rows.Close()
				return fmt.Errorf("store: claim: %w", err)
			}
			if seq != nil {
				j.Body, j.Seq = nil, *seq
			}
			got = append(got, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: claim: %w", err)
		}
		jobs, aside, err = s.usable(ctx, tx, now, p, got)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return jobs, aside, nil
}

// usable opens each claimed endpoint's signing keys and checks its URL; the
// attempts of an endpoint that cannot be used are failed with it (or, for a
// secret sealed after this process checked its key, deferred).
func (s *Store) usable(ctx context.Context, tx pgx.Tx, now time.Time, p ClaimParams, got []claimed) ([]Job, []SetAside, error) {
	keys := map[string][][]byte{}
	bad := map[string]*SetAside{}
	var order []string
	ids := map[string][]int64{}
	for _, c := range got {
		id := c.job.EndpointID
		ids[id] = append(ids[id], c.job.DeliveryID)
		if _, seen := keys[id]; seen || bad[id] != nil {
			continue
		}
		if p.CheckURL != nil {
			if err := p.CheckURL(c.job.URL); err != nil {
				bad[id] = &SetAside{EndpointID: id, Kind: KindURL, Reason: ReasonURL, Detail: err.Error()}
				order = append(order, id)
				continue
			}
		}
		k, err := s.signingKeys(id, c.cur, c.prev, c.prevUntil, now)
		if err != nil {
			u := &SetAside{EndpointID: id, Kind: KindSecret, Reason: ReasonSecret}
			u.Deferred = errors.Is(err, secretbox.ErrOpen) && !c.sealedAt.Before(s.keyChecked())
			bad[id] = u
			order = append(order, id)
			continue
		}
		keys[id] = k
	}
	var aside []SetAside
	for _, id := range order {
		u := bad[id]
		var err error
		if u.Deferred {
			err = deferClaimed(ctx, tx, now, ids[id])
		} else {
			err = setAside(ctx, tx, now, u, ids[id])
		}
		if err != nil {
			return nil, nil, err
		}
		aside = append(aside, *u)
	}
	jobs := make([]Job, 0, len(got))
	for _, c := range got {
		if k, ok := keys[c.job.EndpointID]; ok {
			c.job.Keys = k
			jobs = append(jobs, c.job)
		}
	}
	return jobs, aside, nil
}

// render fills the bodies of event jobs from change_events.
func (s *Store) render(ctx context.Context, jobs []Job, render func(Event) ([]byte, error)) ([]Job, error) {
	var seqs []int64
	for _, j := range jobs {
		if j.Seq != 0 {
			seqs = append(seqs, j.Seq)
		}
	}
	if len(seqs) == 0 {
		return jobs, nil
	}
	evs, err := s.queryEventsForRender(ctx, seqs)
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]Event, len(evs))
	for _, e := range evs {
		bySeq[e.Seq] = e
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Seq == 0 {
			continue
		}
		e, ok := bySeq[j.Seq]
		if !ok {
			continue // pruned from the feed: Body stays nil; the worker dead-letters it
		}
		b, err := render(e)
		if err != nil {
			return nil, err
		}
		j.Body, j.Family, j.Traceparent = b, e.Family, e.Traceparent
	}
	return jobs, nil
}

// RenderEnvelope is the default body of an event delivery: its envelope as JSON.
func RenderEnvelope(e Event) ([]byte, error) {
	b, err := json.Marshal(e.Envelope())
	if err != nil {
		return nil, fmt.Errorf("store: render: %w", err)
	}
	return b, nil
}
