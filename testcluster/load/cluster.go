package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// ClusterNode is one node of a cluster under test.
type ClusterNode struct {
	Name    string // label in reports; default "node-<index>"
	IRCAddr string // plain IRC host:port
	HTTPURL string // base URL whose /api/v1/health reports the node's name, Raft role and term
	// Kill ends the node abruptly (SIGKILL for a spawned process). Nil
	// when the node may not be killed; the leader-kill scenario needs it.
	Kill func() error
	// Restart starts a killed node again on its data and addresses and
	// returns once it serves IRC and HTTP. Nil when the node cannot be
	// restarted; the delivery scenario (B14) needs it.
	Restart func(ctx context.Context) error
	// CPU reads the node's CPU time so far; nil when unknown.
	CPU func() (time.Duration, error)
}

// ClusterTarget is a cluster under test. The scenarios connect over plain
// TCP IRC.
type ClusterTarget struct {
	Nodes       []ClusterNode
	SourceAddrs []netip.Addr // as Target.SourceAddrs
}

// nodeName is the report label of node i.
func (t ClusterTarget) nodeName(i int) string {
	if n := t.Nodes[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("node-%d", i)
}

// namedBy returns a copy of t whose unnamed nodes take the name their
// health check reported.
func (t ClusterTarget) namedBy(h clusterHealth) ClusterTarget {
	t.Nodes = slices.Clone(t.Nodes)
	for i := range t.Nodes {
		if t.Nodes[i].Name == "" && h.errs[i] == nil {
			t.Nodes[i].Name = h.nodes[i].Node
		}
	}
	return t
}

// dialers returns one dialer per node.
func (t ClusterTarget) dialers() ([]*dialer, error) {
	if len(t.Nodes) < 2 {
		return nil, errors.New("load: a cluster scenario needs at least two nodes")
	}
	out := make([]*dialer, len(t.Nodes))
	for i, n := range t.Nodes {
		d, err := newDialer(Target{IRCAddr: n.IRCAddr, Transport: TransportTCP, SourceAddrs: t.SourceAddrs})
		if err != nil {
			return nil, fmt.Errorf("load: %s: %w", t.nodeName(i), err)
		}
		out[i] = d
	}
	return out, nil
}

// NodeHealth is what the cluster scenarios read from GET /api/v1/health.
type NodeHealth struct {
	Node string `json:"node"`
	Role string `json:"role"` // "leader", "follower", "candidate", "shutdown"
	Term uint64 `json:"term"`
}

// healthTimeout bounds one health request.
const healthTimeout = 2 * time.Second

// ReadHealth asks baseURL's /api/v1/health for the node's role and term.
func ReadHealth(ctx context.Context, client *http.Client, baseURL string) (NodeHealth, error) {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	url := strings.TrimSuffix(baseURL, "/") + "/api/v1/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return NodeHealth{}, fmt.Errorf("load: health request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return NodeHealth{}, fmt.Errorf("load: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return NodeHealth{}, fmt.Errorf("load: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return NodeHealth{}, fmt.Errorf("load: GET %s: status %d: %s", url, resp.StatusCode, truncateBytes(body, 200))
	}
	var h NodeHealth
	if err := json.Unmarshal(body, &h); err != nil {
		return NodeHealth{}, fmt.Errorf("load: GET %s: %w", url, err)
	}
	return h, nil
}

// clusterHealth is the health of every node at one moment; a node that
// did not answer has an error instead.
type clusterHealth struct {
	nodes []NodeHealth
	errs  []error
}

func readClusterHealth(ctx context.Context, client *http.Client, nodes []ClusterNode) clusterHealth {
	h := clusterHealth{nodes: make([]NodeHealth, len(nodes)), errs: make([]error, len(nodes))}
	done := make(chan struct{}, len(nodes))
	for i, n := range nodes {
		go func() {
			h.nodes[i], h.errs[i] = ReadHealth(ctx, client, n.HTTPURL)
			done <- struct{}{}
		}()
	}
	for range nodes {
		<-done
	}
	return h
}

// settledLeader returns the index of the one node reporting itself leader
// when every node in consider answered and all report the same term.
func (h clusterHealth) settledLeader(consider []int) (int, bool) {
	leader, term := -1, uint64(0)
	for k, i := range consider {
		if h.errs[i] != nil {
			return -1, false
		}
		if k == 0 {
			term = h.nodes[i].Term
		} else if h.nodes[i].Term != term {
			return -1, false
		}
		if h.nodes[i].Role == "leader" {
			if leader >= 0 {
				return -1, false
			}
			leader = i
		}
	}
	return leader, leader >= 0
}

func (h clusterHealth) String() string {
	parts := make([]string, len(h.nodes))
	for i, n := range h.nodes {
		if h.errs[i] != nil {
			parts[i] = fmt.Sprintf("#%d: %v", i, h.errs[i])
			continue
		}
		parts[i] = fmt.Sprintf("%s %s term %d", n.Node, n.Role, n.Term)
	}
	return strings.Join(parts, "; ")
}

// healthPollInterval is how often the cluster's health is polled while
// waiting for a leader.
const healthPollInterval = 10 * time.Millisecond

// waitSettled polls the health of the nodes in consider until all answer,
// report one term and exactly one leader. It returns that health and the
// leader's index.
func waitSettled(ctx context.Context, client *http.Client, nodes []ClusterNode, consider []int, timeout time.Duration) (clusterHealth, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(healthPollInterval)
	defer ticker.Stop()
	for {
		h := readClusterHealth(ctx, client, nodes)
		if leader, ok := h.settledLeader(consider); ok {
			return h, leader, nil
		}
		select {
		case <-ctx.Done():
			return h, -1, fmt.Errorf("load: the cluster did not settle on one leader and term (%s): %w", h, ctx.Err())
		case <-ticker.C:
		}
	}
}

// WaitClusterSettled waits until every node answers its health check and
// all report the same term and exactly one leader, and returns their
// health and the leader's index.
func WaitClusterSettled(ctx context.Context, nodes []ClusterNode, timeout time.Duration) ([]NodeHealth, int, error) {
	client := &http.Client{Timeout: healthTimeout}
	defer client.CloseIdleConnections()
	h, leader, err := waitSettled(ctx, client, nodes, allIndexes(len(nodes)), timeout)
	return h.nodes, leader, err
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Placement says on which nodes a scenario's active clients (writers,
// senders) connect; each one's passive partner (an observer, the
// receivers) connects to another node.
type Placement string

// The placements.
const (
	PlaceAny       Placement = "any"       // spread over every node
	PlaceLeader    Placement = "leader"    // all on the Raft leader
	PlaceFollower  Placement = "follower"  // all on one follower
	PlaceFollowers Placement = "followers" // spread over the followers
)

// ParsePlacement accepts any, leader, follower and followers.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(strings.ToLower(s)); p {
	case PlaceAny, PlaceLeader, PlaceFollower, PlaceFollowers:
		return p, nil
	}
	return "", fmt.Errorf("load: unknown placement %q (want any, leader, follower or followers)", s)
}

// clientPlace is where one active client and its partner connect.
type clientPlace struct{ home, other int }

// placeClients places n active clients on a cluster of size nodes whose
// leader is node leader. The candidates are the nodes the placement
// allows, in cluster order; client i connects to candidate i mod k and its
// partner to the next candidate, or, with one candidate, to the next node
// after it that is not the leader (the leader only when no other node is
// left).
func placeClients(p Placement, size, leader, n int) ([]clientPlace, error) {
	if size < 2 {
		return nil, errors.New("load: placing clients needs at least two nodes")
	}
	var candidates []int
	switch p {
	case PlaceAny:
		candidates = allIndexes(size)
	case PlaceLeader:
		candidates = []int{leader}
	case PlaceFollower, PlaceFollowers:
		for i := range size {
			if i != leader {
				candidates = append(candidates, i)
			}
		}
		if p == PlaceFollower {
			candidates = candidates[:1]
		}
	default:
		return nil, fmt.Errorf("load: unknown placement %q", p)
	}
	out := make([]clientPlace, n)
	for i := range out {
		home := candidates[i%len(candidates)]
		other := -1
		if len(candidates) >= 2 {
			other = candidates[(i+1)%len(candidates)]
		} else {
			for step := 1; step < size; step++ {
				if j := (home + step) % size; j != leader {
					other = j
					break
				}
			}
			if other < 0 {
				other = (home + 1) % size
			}
		}
		out[i] = clientPlace{home: home, other: other}
	}
	return out, nil
}

// nodeCPU reads the CPU time of every node that has a reader (0 for the
// others, and for a node whose reading fails, e.g. a killed one).
func nodeCPU(nodes []ClusterNode) []time.Duration {
	out := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		if n.CPU == nil {
			continue
		}
		if d, err := n.CPU(); err == nil {
			out[i] = d
		}
	}
	return out
}

// NodeCPUShare is one node's CPU use during a measured phase.
type NodeCPUShare struct {
	Node  string  `json:"node"`
	Role  string  `json:"role"`  // at the start of the run
	Cores float64 `json:"cores"` // CPU seconds per second of the phase
}

// cpuShares turns two readings into per-node core shares.
func cpuShares(t ClusterTarget, roles []string, start, end []time.Duration, elapsed time.Duration) []NodeCPUShare {
	if elapsed <= 0 {
		return nil
	}
	var out []NodeCPUShare
	for i := range t.Nodes {
		if t.Nodes[i].CPU == nil || end[i] == 0 { // unknown, or no longer running
			continue
		}
		d := max(end[i]-start[i], 0)
		out = append(out, NodeCPUShare{Node: t.nodeName(i), Role: roles[i], Cores: d.Seconds() / elapsed.Seconds()})
	}
	return out
}

// totalCores sums the shares.
func totalCores(shares []NodeCPUShare) float64 {
	s := 0.0
	for _, c := range shares {
		s += c.Cores
	}
	return s
}
