package libraryclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// SSEEvent is one graphql-sse event: "next" (Data is an execution result) or
// "complete".
type SSEEvent struct {
	Event string
	Data  string
}

// SSEStream is an open graphql-sse (distinct connections) response.
type SSEStream struct {
	Response *http.Response
	lines    *bufio.Reader
}

// PostSSE sends a GraphQL request as POST with Accept: text/event-stream
// (graphql-sse distinct connections mode) and returns the response; a
// non-stream answer (a refusal) is returned as is, with Next unusable.
func PostSSE(ctx context.Context, url, key, query string) (*SSEStream, error) {
	body, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", url, err)
	}
	return &SSEStream{Response: resp, lines: bufio.NewReader(resp.Body)}, nil
}

// Next reads the next event, skipping comments (keep-alives).
func (s *SSEStream) Next() (SSEEvent, error) {
	var ev SSEEvent
	var data []string
	for {
		line, err := s.lines.ReadString('\n')
		if err != nil {
			if err == io.EOF && ev.Event != "" {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			return SSEEvent{}, fmt.Errorf("read event stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Event != "" || len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			ev.Event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// Close ends the stream.
func (s *SSEStream) Close() error {
	return s.Response.Body.Close()
}
