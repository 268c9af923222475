package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Lag (docs/read-replicas.md "Measuring lag"). Each round first reads the primary's flushed WAL position and
// keeps (time first seen, position) whenever it advanced. A replica that has replayed position L lags by the age
// of the oldest kept sample beyond L: the primary had WAL the replica still has not applied at least since then.
// It is 0 when the replica has replayed everything the primary had flushed, however long the primary was idle,
// and it keeps growing when the replica stops receiving (a broken stream), which the replica-side formula
// cannot see. When the primary does not answer, the replica-side formula stands in: 0 when everything received is
// replayed, else now() - pg_last_xact_replay_timestamp().

// lsnSample is a primary WAL position and when a check first saw it.
type lsnSample struct {
	at  time.Time
	lsn int64
}

const primaryPositionSQL = `SELECT pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint`

const replicaCheckSQL = `SELECT pg_is_in_recovery(),
	coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0')::bigint, -1),
	CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
	     ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8,
	(SELECT coalesce(max(id), 0) FROM change_events)`

// checkResult is what one replica's check found.
type checkResult struct {
	err      error
	standby  bool
	replayed int64
	localLag time.Duration // the replica-side formula
	answered time.Time
}

// CheckNow runs one check round: the primary's position, then every replica at once, each bounded by
// CheckTimeout. Start calls it every CheckInterval; tests call it to step the routing deterministically.
func (r *Replicas) CheckNow(ctx context.Context) {
	r.checkMu.Lock()
	defer r.checkMu.Unlock()
	havePrimary := r.samplePrimary(ctx)
	if ctx.Err() == nil {
		r.primaryUp.Store(havePrimary)
	}
	results := make([]checkResult, len(r.reps))
	var wg sync.WaitGroup
	for i, rep := range r.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.checkReplica(ctx, rep)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // shutting down: the results are the shutdown's, not the replicas'
	}
	now := time.Now()
	usable := 0
	summary := make([]string, 0, len(r.reps))
	for i, rep := range r.reps {
		res := results[i]
		state, lag := StateOK, time.Duration(0)
		switch {
		case res.err != nil:
			state = StateDown
		case !res.standby:
			state = StateNotStandby
		default:
			if havePrimary {
				lag = r.lagOf(res.replayed, res.answered)
			} else {
				lag = res.localLag
			}
			if lag > r.opts.MaxLag {
				state = StateLagging
			}
		}
		rep.mu.Lock()
		rep.state = state
		if res.err == nil {
			rep.lag = lag
		}
		rep.mu.Unlock()
		rep.usable.Store(state == StateOK)
		if state == StateOK {
			usable++
		}
		r.logReplica(rep, state, lag, res, now)
		summary = append(summary, rep.Name+": "+describe(state, lag, res.err))
	}
	r.logAll(usable, strings.Join(summary, "; "), now)
}

// describe is one replica's state for the "no usable replica" line.
func describe(state string, lag time.Duration, err error) string {
	switch state {
	case StateLagging:
		return state + " " + lag.Round(time.Millisecond).String()
	case StateDown:
		return state + " (" + causeOf(err) + ")"
	}
	return state
}

// samplePrimary records the primary's flushed WAL position; false when the primary did not answer.
func (r *Replicas) samplePrimary(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, r.opts.CheckTimeout)
	defer cancel()
	var lsn int64
	if err := r.primary.QueryRow(ctx, primaryPositionSQL).Scan(&lsn); err != nil {
		return false
	}
	r.addSample(time.Now(), lsn)
	return true
}

// addSample keeps lsn if the primary advanced, and drops samples no lag decision needs: it keeps those younger
// than MaxLag plus two intervals and the newest older one, so a replica behind every kept sample is still known
// to lag by more than MaxLag.
func (r *Replicas) addSample(now time.Time, lsn int64) {
	if n := len(r.samples); n == 0 || lsn > r.samples[n-1].lsn {
		r.samples = append(r.samples, lsnSample{at: now, lsn: lsn})
	}
	cutoff := now.Add(-(r.opts.MaxLag + 2*r.opts.CheckInterval))
	keepFrom := 0
	for keepFrom+1 < len(r.samples) && r.samples[keepFrom+1].at.Before(cutoff) {
		keepFrom++
	}
	r.samples = append(r.samples[:0], r.samples[keepFrom:]...)
}

// lagOf is the age, at now, of the oldest sample of the primary beyond replayed (0 if there is none).
func (r *Replicas) lagOf(replayed int64, now time.Time) time.Duration {
	for _, s := range r.samples {
		if s.lsn > replayed {
			return max(now.Sub(s.at), 0)
		}
	}
	return 0
}

func (r *Replicas) checkReplica(ctx context.Context, rep *replica) checkResult {
	ctx, cancel := context.WithTimeout(ctx, r.opts.CheckTimeout)
	defer cancel()
	var res checkResult
	var localLag float64
	var feed int64
	res.err = rep.Pool.QueryRow(ctx, replicaCheckSQL).Scan(&res.standby, &res.replayed, &localLag, &feed)
	res.answered = time.Now()
	if res.err == nil {
		rep.noteFeed(feed)
	}
	res.localLag = time.Duration(localLag * float64(time.Second))
	return res
}

// logReplica logs a replica's state change (rate-limited) and reads that failed on it since the last line.
func (r *Replicas) logReplica(rep *replica, state string, lag time.Duration, res checkResult, now time.Time) {
	due, changes := rep.log.observe(state, now, r.opts.LogEvery)
	if due {
		attrs := []any{"replica", rep.Name, "state", state, "changes", changes}
		switch state {
		case StateOK:
			r.log.Info("read replica in use", append(attrs, "lag", lag.String())...)
		case StateLagging:
			r.log.Warn("read replica skipped: replay lag above the maximum", append(attrs, "lag", lag.String(), "max_lag", r.opts.MaxLag.String())...)
		case StateDown:
			r.log.Warn("read replica skipped: check failed", append(attrs, "cause", causeOf(res.err))...)
		case StateNotStandby:
			r.log.Warn("read replica skipped: the server is not a standby (promoted, or not a replica)", attrs...)
		}
	}
	if n := rep.readErrors.Load(); n > rep.errorsLogged && (due || now.Sub(rep.log.at) >= r.opts.LogEvery) {
		r.log.Warn("reads failed on a read replica and were answered by the primary", "replica", rep.Name, "failed_reads", n-rep.errorsLogged)
		rep.errorsLogged = n
		rep.log.at = now
	}
}

// logAll logs when reads move to the primary because no replica is usable, and back (rate-limited).
func (r *Replicas) logAll(usable int, states string, now time.Time) {
	state := "replicas"
	if usable == 0 {
		state = "primary"
	}
	due, changes := r.all.observe(state, now, r.opts.LogEvery)
	if !due {
		return
	}
	if state == "primary" {
		r.log.Warn("no read replica is usable: reads go to the primary", "replicas", len(r.reps), "states", states, "changes", changes)
	} else {
		r.log.Info("reads go to read replicas again", "usable", usable, "replicas", len(r.reps), "changes", changes)
	}
}

// causeOf describes a check failure without DSN, SQL or values.
func causeOf(err error) string {
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		return "postgres error SQLSTATE " + pgErr.Code
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	default:
		return "connection failed"
	}
}
