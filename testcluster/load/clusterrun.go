package load

import (
	"context"
	"net/http"
	"time"
)

// clusterRun is what every cluster scenario starts from: the nodes have
// settled on one leader and term, unnamed nodes carry the names their health
// checks reported, and there is one IRC dialer per node. Call close when the
// run ends.
type clusterRun struct {
	target  ClusterTarget
	dialers []*dialer
	health  *http.Client // polls /api/v1/health during the run
	nodes   []NodeHealth // at the start
	leader  int
	roles   []string // each node's Raft role at the start, for the CPU shares
}

// startClusterRun waits (up to timeout) until target's nodes agree on a
// leader and a term.
func startClusterRun(ctx context.Context, target ClusterTarget, timeout time.Duration) (*clusterRun, error) {
	dialers, err := target.dialers()
	if err != nil {
		return nil, err
	}
	health := &http.Client{Timeout: healthTimeout}
	h, leader, err := waitSettled(ctx, health, target.Nodes, allIndexes(len(target.Nodes)), timeout)
	if err != nil {
		health.CloseIdleConnections()
		return nil, err
	}
	r := &clusterRun{target: target.namedBy(h), dialers: dialers, health: health, nodes: h.nodes, leader: leader}
	r.roles = make([]string, len(h.nodes))
	for i, n := range h.nodes {
		r.roles[i] = n.Role
	}
	return r, nil
}

func (r *clusterRun) close() { r.health.CloseIdleConnections() }

// leaderName is the report label of the leader at the start.
func (r *clusterRun) leaderName() string { return r.target.nodeName(r.leader) }

// place puts n active clients on the nodes p allows (placeClients) and
// counts the "home → other" node pairs for the report.
func (r *clusterRun) place(p Placement, n int) ([]clientPlace, map[string]int, error) {
	places, err := placeClients(p, len(r.target.Nodes), r.leader, n)
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int{}
	for _, pl := range places {
		counts[r.target.nodeName(pl.home)+" → "+r.target.nodeName(pl.other)]++
	}
	return places, counts, nil
}
