package load

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// votersMetric is the node's count of voters in the Raft configuration it knows.
const votersMetric = "palaver_raft_voters"

// WaitVoters polls baseURL's /metrics until the node counts want Raft voters. A joining node
// becomes a voter only once it is caught up and has stayed healthy for a while, so a freshly
// formed cluster survives the loss of a node only from then on.
func WaitVoters(ctx context.Context, baseURL string, want int) error {
	client := &http.Client{Timeout: healthTimeout}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last int
	var lastErr error
	for {
		if last, lastErr = readVoters(ctx, client, baseURL); lastErr == nil && last >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("load: waiting for %d raft voters at %s (last count %d, last error %v): %w", want, baseURL, last, lastErr, ctx.Err())
		case <-tick.C:
		}
	}
}

func readVoters(ctx context.Context, client *http.Client, baseURL string) (int, error) {
	url := strings.TrimSuffix(baseURL, "/") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("load: metrics request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("load: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	return parseVoters(bufio.NewScanner(resp.Body))
}

// parseVoters finds votersMetric in a Prometheus text exposition.
func parseVoters(sc *bufio.Scanner) (int, error) {
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != votersMetric {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("load: %s %q: %w", votersMetric, value, err)
		}
		return int(v), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("load: reading metrics: %w", err)
	}
	return 0, fmt.Errorf("load: no %s in the metrics", votersMetric)
}
