package stack

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// GatewayMetric reads one sample of an unlabelled metric (e.g. go_goroutines,
// process_resident_memory_bytes) from the gateway's admin /metrics endpoint.
func (s *Stack) GatewayMetric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Getenv("CIVICGATE_ADMIN")+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", name, err)
		}
		return f, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, fmt.Errorf("metric %s not exposed", name)
}
