// Package fetch is the polite HTTP client of the sync importers: a token-bucket request rate, retries with
// exponential backoff and full jitter on 429, 5xx and transport errors (honouring Retry-After), and an API
// key added to every request without ever appearing in errors or logs.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Client fetches upstream pages.
type Client struct {
	HTTP *http.Client
	// Limiter paces requests (nil = unlimited).
	Limiter *rate.Limiter
	// Key, when set, is sent as query parameter KeyParam or, when KeyParam is "", as header KeyHeader with
	// KeyPrefix (e.g. "Authorization: Token <key>").
	Key, KeyParam, KeyHeader, KeyPrefix string
	// MaxAttempts per request (default 6); BaseDelay (default 1 s) doubles per retry up to MaxDelay (60 s).
	MaxAttempts         int
	BaseDelay, MaxDelay time.Duration
	// MaxBody bounds a response body (default 64 MiB).
	MaxBody int64
}

// StatusError is a non-retryable (or finally failed) HTTP status.
type StatusError struct {
	URL    string // without the API key
	Status int
}

func (e *StatusError) Error() string { return fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Status) }

// PerMinute returns a limiter allowing n requests a minute with a burst of 1.
func PerMinute(n int) *rate.Limiter {
	if n <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(float64(n)/60), 1)
}

// Get fetches rawURL and returns its body.
func (c *Client) Get(ctx context.Context, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch: bad url: %w", err)
	}
	shown := u.String() // before the key is added
	if c.Key != "" && c.KeyParam != "" {
		q := u.Query()
		q.Set(c.KeyParam, c.Key)
		u.RawQuery = q.Encode()
	}
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = 6
	}
	base, maxDelay := c.BaseDelay, c.MaxDelay
	if base <= 0 {
		base = time.Second
	}
	if maxDelay <= 0 {
		maxDelay = time.Minute
	}
	var lastErr error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			wait := backoff(base, maxDelay, attempt)
			var se *retryAfterError
			if errors.As(lastErr, &se) && se.after > wait {
				wait = se.after
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		body, retry, err := c.once(ctx, u, shown)
		if err == nil {
			return body, nil
		}
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("fetch: giving up after %d attempts: %w", attempts, lastErr)
}

type retryAfterError struct {
	StatusError
	after time.Duration
}

func (e *retryAfterError) Unwrap() error { return &e.StatusError }

func (c *Client) once(ctx context.Context, u *url.URL, shown string) ([]byte, bool, error) {
	if c.Limiter != nil {
		if err := c.Limiter.Wait(ctx); err != nil {
			return nil, false, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false, fmt.Errorf("fetch: request for %s: %w", shown, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "recordsd-sync (civicgate mirror)")
	if c.Key != "" && c.KeyParam == "" && c.KeyHeader != "" {
		req.Header.Set(c.KeyHeader, c.KeyPrefix+c.Key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		// The transport error can carry the full URL (with the key): report only the safe form.
		return nil, true, fmt.Errorf("fetch: GET %s: transport error", shown)
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = 64 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, true, fmt.Errorf("fetch: GET %s: reading body: transport error", shown)
	}
	if int64(len(body)) > limit {
		return nil, false, fmt.Errorf("fetch: GET %s: body larger than %d bytes", shown, limit)
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return body, false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, true, &retryAfterError{StatusError{URL: shown, Status: resp.StatusCode}, retryAfter(resp.Header.Get("Retry-After"))}
	default:
		return nil, false, &StatusError{URL: shown, Status: resp.StatusCode}
	}
}

// backoff is exponential with full jitter: uniform in [d/2, d] where d = base·2^(attempt−1), capped.
func backoff(base, maxDelay time.Duration, attempt int) time.Duration {
	d := base << (attempt - 1)
	if d <= 0 || d > maxDelay {
		d = maxDelay
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 10*time.Minute)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), 10*time.Minute)
	}
	return 0
}
