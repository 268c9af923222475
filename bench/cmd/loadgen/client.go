package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"
)

// newClient is one keep-alive HTTP/1.1 connection's client.
func newClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1,
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
	}
}

// errTransport marks a request that got no answer (e.g. the target is not
// listening yet), as opposed to a wrong answer.
var errTransport = errors.New("no answer")

// doer sends requests of the mix to one target over one connection and
// checks each answer: 200 and a "data" object without "errors".
type doer struct {
	client *http.Client
	t      target
	buf    bytes.Buffer
}

// do sends the connection's i-th request (i picks its bearer).
func (d *doer) do(ctx context.Context, body []byte, i int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.t.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if d.t.bearers != nil {
		v, err := d.t.bearers.value(i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.t.name, err)
		}
		req.Header.Set("Authorization", "Bearer "+v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w: %w", d.t.name, errTransport, err)
	}
	d.buf.Reset()
	_, err = d.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.t.name, err)
	}
	b := d.buf.Bytes()
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s: HTTP %d: %.200s", d.t.name, resp.StatusCode, b)
	}
	if !bytes.HasPrefix(b, []byte(`{"data":{`)) || bytes.Contains(b, []byte(`"errors":`)) {
		return b, fmt.Errorf("%s: GraphQL error: %.200s", d.t.name, b)
	}
	return b, nil
}

// checkTargets waits (up to 60 s) until every target answers the whole mix
// and checks that every target returns the same bytes for each request: the
// proxies must be transparent for the comparison to mean anything.
func checkTargets(ctx context.Context, cfg config) error {
	first := map[string][]byte{}
	for _, t := range cfg.targets {
		d := &doer{client: newClient(), t: t}
		deadline := time.Now().Add(60 * time.Second)
		for i, rq := range cfg.mix {
			var body []byte
			var err error
			for {
				body, err = d.do(ctx, rq.body, i)
				if err == nil || i > 0 || !errors.Is(err, errTransport) || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				select { // the target may still be starting: retry the first request while it does not answer
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
			if err != nil {
				return fmt.Errorf("target check (%s): %w", rq.name, err)
			}
			if prev, ok := first[rq.name]; !ok {
				first[rq.name] = slices.Clone(body)
			} else if !bytes.Equal(prev, body) {
				return fmt.Errorf("target %s answers %q differently from %s: %.120s vs %.120s",
					t.name, rq.name, cfg.targets[0].name, body, prev)
			}
		}
		d.client.CloseIdleConnections()
	}
	return nil
}
