package export

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// maxSinkReply is how much of a sink's answer is read (and thrown away), so a
// sink answering with a huge body costs nothing but its timeout.
const maxSinkReply = 4 << 10

// Sink is where batches are POSTed.
type Sink struct {
	URL string
	// Header and Value: an optional header sent with every batch
	// (Authorization: Bearer … for OpenMeter); never logged.
	Header, Value string
	Timeout       time.Duration // per request; DefaultTimeout when 0
	// Client is the HTTP client (tests); nil: NewClient(Timeout).
	Client *http.Client
}

// DefaultTimeout bounds one POST, its answer included.
const DefaultTimeout = 30 * time.Second

// NewClient is the sink's HTTP client: no redirects followed (a 3xx is a
// failed delivery, so a sink cannot send the gateway's credentials or
// requests elsewhere — to loopback or a metadata address), no proxy from
// the environment, timeout per request (docs/design.md D73).
func NewClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          2,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// SendError is a failed delivery, described without the URL, credentials or
// the sink's body: its status or the network error's cause.
type SendError struct {
	Status int    // the sink's status, 0 when none came
	Cause  string // e.g. "503 Service Unavailable", "timeout", "connection refused"
}

func (e *SendError) Error() string { return "export: sink: " + e.Cause }

// Send POSTs events as one CloudEvents JSON batch; nil only on a 2xx answer.
func (s *Sink) Send(ctx context.Context, events []Event) error {
	body, err := json.Marshal(events)
	if err != nil {
		return fmt.Errorf("export: encode batch: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return &SendError{Cause: "the sink URL is not a valid URL"}
	}
	req.Header.Set("Content-Type", BatchContentType)
	if s.Header != "" && s.Value != "" {
		req.Header.Set(s.Header, s.Value)
	}
	client := s.Client
	if client == nil {
		client = NewClient(cmp.Or(s.Timeout, DefaultTimeout))
	}
	resp, err := client.Do(req)
	if err != nil {
		return &SendError{Cause: networkCause(err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSinkReply))
	if resp.StatusCode/100 != 2 {
		return &SendError{Status: resp.StatusCode, Cause: resp.Status}
	}
	return nil
}

// networkCause is err without the URL *url.Error carries (it may hold
// credentials or a token in its query).
func networkCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Op + ": " + oe.Err.Error()
	}
	return err.Error()
}
