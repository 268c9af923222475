package delivery

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/civicgate/civicgate/modules/webhooks/egress"
	"github.com/civicgate/civicgate/modules/webhooks/signature"
	"github.com/civicgate/civicgate/modules/webhooks/store"
)

// Causes of a failed attempt, recorded as the delivery's last_error and shown
// in the deliveries list: a small documented set (README "Delivery"), never a
// raw error (which could carry a URL, an address or internals).
const (
	CauseRefused    = "refused address" // the SSRF guard refused the address dialled
	CauseDNS        = "dns"             // the host name did not resolve
	CauseTLS        = "tls"             // TLS handshake or certificate verification failed
	CauseTimeout    = "timeout"         // no answer within the timeout
	CauseConnection = "connection"      // refused, reset or another network failure
	CauseBadURL     = "bad url"         // the stored URL cannot make a request
	CausePruned     = "event no longer in the change feed"
	// CauseStatus is followed by the HTTP status code of a non-2xx answer
	// ("status 503"; 3xx included, redirects are not followed).
	CauseStatus = "status "
)

// attempt performs one claimed attempt and records its outcome.
//
// ctx carries the request; stop ends the retries of a failed recording (the
// Run context: a shutdown does not wait for a database that is away).
func (d *Dispatcher) attempt(ctx, stop context.Context, j store.Job) {
	ctx, span := d.startDeliverSpan(ctx, j)
	var (
		o               store.Outcome
		result, outcome string
	)
	defer func() { endDeliverSpan(span, o, result, outcome) }() // after the lease renewer stops
	defer d.keepLease(ctx, j)()
	start := time.Now()
	o, result, detail := d.send(ctx, j)
	d.cfg.Metrics.Attempt(result, time.Since(start))
	outcome = o.Status
	switch {
	case o.Disable:
		outcome = "disabled"
	case o.Status == "pending":
		outcome = "retry"
	}
	if err := d.finish(ctx, stop, start, j, o); err != nil {
		outcome = "unrecorded"
		d.cfg.Logger.Warn("recording a webhook attempt failed; it will be retried when its lease ends", zap.String("endpoint_id", j.EndpointID),
			zap.Int64("delivery_id", j.DeliveryID), zap.Error(err))
		return
	}
	d.cfg.Metrics.Delivery(outcome)
	if outcome != "delivered" {
		d.cfg.Logger.Info("webhook attempt not delivered", zap.String("endpoint_id", j.EndpointID),
			zap.Int64("delivery_id", j.DeliveryID), zap.String("webhook_id", j.EventID), zap.Int("attempt", j.Attempt),
			zap.String("outcome", outcome), zap.String("reason", o.Error), zap.String("detail", detail))
	}
}

// keepLease renews j's lease every Lease/3 until the returned function is
// called (it waits for the renewer to stop). A renewal that fails because the
// database is away is tried again at the next tick: while it is away no other
// instance can claim the attempt either. A lost lease ends the renewals.
func (d *Dispatcher) keepLease(ctx context.Context, j store.Job) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := d.cfg.Lease / 3
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := d.cfg.Store.Renew(rctx, j, d.cfg.Clock.Now().Add(d.cfg.Lease))
			rcancel()
			if errors.Is(err, store.ErrLeaseLost) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// finish records an outcome, retrying while the database is unreachable for
// up to recordFor (the lease is renewed meanwhile): an answered request that
// is not recorded would be sent again once the lease runs out.
func (d *Dispatcher) finish(ctx, stop context.Context, claimed time.Time, j store.Job, o store.Outcome) error {
	until := claimed.Add(recordFor)
	wait := 100 * time.Millisecond
	for {
		err := d.cfg.Store.Finish(ctx, d.cfg.Clock.Now(), j, o)
		if err == nil || errors.Is(err, store.ErrLeaseLost) || time.Now().Add(wait).After(until) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-stop.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// send POSTs the attempt and classifies the answer: the outcome (its Error
// one of the Cause values), the metrics result and, for the log only, a
// detail (the refused address).
func (d *Dispatcher) send(ctx context.Context, j store.Job) (store.Outcome, string, string) {
	if j.Body == nil {
		return store.Outcome{Status: "failed", Error: CausePruned}, "pruned", ""
	}
	now := d.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(j.Body))
	if err != nil {
		return d.retry(j, now, 0, CauseBadURL, 0), "network", ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "civicgate-webhooks/1")
	signature.SetHeaders(req.Header, j.Keys, j.EventID, now, j.Body)
	injectTraceparent(ctx, req.Header)
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		cause, result, detail := classify(err)
		return d.retry(j, d.cfg.Clock.Now(), 0, cause, 0), result, detail
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	code := resp.StatusCode
	result := strconv.Itoa(code/100) + "xx"
	after := d.cfg.Clock.Now()
	switch {
	case code >= 200 && code < 300:
		return store.Outcome{Status: "delivered", StatusCode: code}, result, ""
	case code == http.StatusGone:
		return store.Outcome{Status: "failed", StatusCode: code, Error: CauseStatus + "410", Disable: true}, result, ""
	}
	ra := parseRetryAfter(resp.Header.Get("Retry-After"), after)
	return d.retry(j, after, code, CauseStatus+strconv.Itoa(code), ra), result, ""
}

// retry schedules the next attempt after a failed one, or dead-letters.
func (d *Dispatcher) retry(j store.Job, now time.Time, code int, reason string, retryAfter time.Duration) store.Outcome {
	o := store.Outcome{StatusCode: code, Error: reason}
	if j.Kind == "test" || j.Attempt >= len(d.cfg.Schedule) {
		o.Status = "failed"
		return o
	}
	delay := d.NextDelay(j.Attempt)
	if retryAfter > delay {
		delay = retryAfter
	}
	o.Status, o.NextAt = "pending", now.Add(delay)
	return o
}

// NextDelay is the jittered delay after failed attempt number attempt
// (1-based): Schedule[attempt] ± 20 %.
func (d *Dispatcher) NextDelay(attempt int) time.Duration {
	base := d.cfg.Schedule[attempt]
	f := 1 - Jitter + 2*Jitter*d.cfg.Rand()
	return time.Duration(float64(base) * f)
}

// parseRetryAfter reads delta-seconds or an HTTP date (RFC 9110 §10.2.3),
// capped at MaxRetryAfter; 0 if absent or unusable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// classify turns a transport error into its cause, a metrics result and,
// for a refusal, the guard's reason (for the log).
func classify(err error) (cause, result, detail string) {
	var ne net.Error
	var dns *net.DNSError
	switch {
	case egress.Refused(err):
		return CauseRefused, "refused", refusalReason(err)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return CauseTimeout, "timeout", ""
	case errors.As(err, &dns):
		return CauseDNS, "network", ""
	case isTLS(err):
		return CauseTLS, "network", ""
	}
	return CauseConnection, "network", ""
}

// isTLS reports whether err is a TLS handshake or certificate failure (many
// of crypto/tls's errors are plain errors reading "tls: …").
func isTLS(err error) bool {
	var (
		verify *tls.CertificateVerificationError
		header tls.RecordHeaderError
		ua     x509.UnknownAuthorityError
		host   x509.HostnameError
		inv    x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &ua) || errors.As(err, &host) ||
		errors.As(err, &inv) || strings.Contains(err.Error(), "tls: ")
}

// refusalReason is the guard's own reason (the address and its class).
func refusalReason(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) == egress.ErrRefused {
			return strings.TrimPrefix(e.Error(), egress.ErrRefused.Error()+": ")
		}
	}
	return "target refused"
}
