package raft

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

// The operator plane: `palaver cluster status|members|remove|transfer-leadership` talk to any
// node's cluster listener under the ALPN protocol alpnOperator.
//
// # Credentials
//
// An operator is whoever holds the cluster secret file, as an enrolling node is; but the operator
// does not join anything and holds no node certificate. Its credential is the file's CA keys,
// which no node keeps (nodes hold their own key and the CA certificates only, raft/trust), so a
// node's disk does not open this plane. The exchange is bound to the TLS session:
//
//  1. TLS 1.3 with ALPN "palaver-operator"; the node presents its node certificate and asks
//     for no client certificate;
//  2. both ends read 32 bytes of keying material exported from the session
//     (RFC 8446 §7.5, label operatorExporterLabel);
//  3. the client sends an ECDSA signature of that material by each CA key of its file
//     (trust.Secret.SignOperator); the node accepts the connection when one verifies under a CA
//     certificate it trusts (trust.Identity.VerifyOperator);
//  4. the client checks the node's certificate chain against the CAs of its file
//     (trust.Secret.VerifyNode): TLS proved the node holds that certificate's key, so the client
//     talks to a node the cluster's CA enrolled. A man in the middle can relay neither proof:
//     its two sessions export different material and present different certificates.
//
// For the nodes of the previous version during a rolling upgrade, the client also sends the
// earlier proof (an HMAC with a key derived from a gossip key, HKDF-SHA256, info
// operatorKeyInfo) and checks the HMAC such a node answers with; this version ignores that proof,
// since every node's disk holds the gossip keys. A bearer token on the public HTTP server was not
// used because the public face should not carry cluster administration.
//
// After the proof the connection carries operator calls in the cluster RPC's frames (rpc.go): an
// operatorRequest, an operatorResponse back. status asks every server of the configuration for
// its node report over the cluster RPC (opNodeReport); remove and transfer run on the leader
// (forwarded to it over the cluster RPC when the node asked is a follower).

const (
	alpnOperator          = "palaver-operator"
	operatorKeyInfo       = "palaver operator key v1"
	operatorExporterLabel = "EXPORTER-palaver-operator"
	// operatorAuthTimeout bounds the proof; operatorIdle closes a connection that carries no call.
	operatorAuthTimeout = 10 * time.Second
	operatorIdle        = 5 * time.Minute
	// operatorMaxCall bounds one call; a backup of a large store takes a while.
	operatorMaxCall = time.Hour
	// nodeReportTimeout bounds one node's answer to a status call.
	nodeReportTimeout = 2 * time.Second
)

// Cluster RPC operations between nodes for the operator plane. A node of an older version
// answers them with codeBadRequest; status shows that node as not reporting.
const (
	opNodeReport       = "node_report"       // body: statusRequest; answer Body: a NodeReport
	opOperatorRemove   = "operator_remove"   // body: operatorRequest; run on the leader
	opOperatorTransfer = "operator_transfer" // body: operatorRequest; run on the leader
)

// Operator call names and the code of a refused proof.
const (
	operatorAuth     = "auth"
	operatorStatus   = "status"
	operatorRemove   = "remove"
	operatorTransfer = "transfer-leadership"

	codeUnauthorized = "unauthorized"
)

// ErrOperatorRefused is the error of an operator whose credentials the node does not accept.
var ErrOperatorRefused = errors.New("raft: the node refused the operator credentials (not this cluster's secret)")

// operatorRequest is one operator call (and the body of the forwarded ones).
type operatorRequest struct {
	Op        string   `json:"op"`
	Node      string   `json:"node,omitempty"`
	MAC       []byte   `json:"mac,omitempty"`  // the previous version's proof (see Credentials)
	Sigs      [][]byte `json:"sigs,omitempty"` // auth: the CA keys' signatures of the session
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	WithKeys  bool     `json:"with_keys,omitempty"` // backup: include the node's private keys
}

// operatorResponse is one answer.
type operatorResponse struct {
	Code   string         `json:"code,omitempty"`
	Error  string         `json:"error,omitempty"`
	MAC    []byte         `json:"mac,omitempty"`
	Status *ClusterStatus `json:"status,omitempty"`
	Leader string         `json:"leader,omitempty"`
	Size   int64          `json:"size,omitempty"` // backup: the archive's bytes follow the frame
}

// NodeExtra is what the node layer adds to this node's report: its version and its place in the
// event exchange (see Store.SetOperatorReport).
type NodeExtra struct {
	Version string `json:"version,omitempty"`
	// LogHead is the seq of the newest message of this node's own messages log.
	LogHead int64 `json:"log_head"`
	// InCursors is, per other origin node, how far this node stored that origin's messages log.
	InCursors map[string]int64 `json:"in_cursors,omitempty"`
}

// NodeReport is one node's row of ClusterStatus.
type NodeReport struct {
	Node        string `json:"node"`
	RaftAddr    string `json:"raft_addr"`
	ClusterAddr string `json:"cluster_addr,omitempty"`
	// Gossip is what the node asked sees of it in gossip: alive, dead or unknown.
	Gossip string `json:"gossip"`
	// Role is the node's own raft state (leader, follower, candidate), or "unreachable".
	Role string `json:"role"`
	// Suffrage is voter, nonvoter, or none for a member outside the raft configuration.
	Suffrage     string `json:"suffrage"`
	Term         uint64 `json:"term,omitempty"`
	AppliedIndex uint64 `json:"applied_index"`
	CommitIndex  uint64 `json:"commit_index,omitempty"`
	LastLogIndex uint64 `json:"last_log_index,omitempty"`
	// Lag is how many entries the node's applied index trails the leader's (the highest reported
	// when the leader did not answer).
	Lag uint64 `json:"lag"`
	// LastContactMS is how long ago the node last heard from a leader: 0 on the leader, -1 when
	// never or unknown.
	LastContactMS int64 `json:"last_contact_ms"`
	NodeExtra
	// ExchangeBehind is how many messages of the other reporting nodes' own logs this node has
	// not stored yet (their log heads minus its cursors); -1 when unknown.
	ExchangeBehind int64  `json:"exchange_behind"`
	Error          string `json:"error,omitempty"`
}

// ClusterStatus is the answer to an operator status call, as the node asked sees the cluster.
type ClusterStatus struct {
	ClusterID string       `json:"cluster_id"`
	AskedNode string       `json:"asked_node"`
	Leader    string       `json:"leader"`
	Term      uint64       `json:"term"`
	Voters    int          `json:"voters"`
	Nodes     []NodeReport `json:"nodes"`
}

// operatorState is the node layer's report hook.
type operatorState struct {
	extra  atomic.Pointer[func(context.Context) NodeExtra]
	backup atomic.Pointer[backupHook]
}

// SetOperatorReport sets what the node layer adds to this node's report in `palaver cluster
// status`. f is called on a cluster RPC goroutine, bounded by ctx, and must not propose.
func (s *Store) SetOperatorReport(f func(context.Context) NodeExtra) { s.operator.extra.Store(&f) }

// operatorKey derives the operator key from one gossip key.
func operatorKey(gossipKey []byte) ([]byte, error) {
	key, err := hkdf.Key(sha256.New, gossipKey, nil, operatorKeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("raft: derive the operator key: %w", err)
	}
	return key, nil
}

// operatorMAC is the proof of one side ("client" or "server") over the session's material.
func operatorMAC(key []byte, side string, material []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(side))
	m.Write(material)
	return m.Sum(nil)
}

// sessionMaterial exports the keying material both proofs are bound to.
func sessionMaterial(cs tls.ConnectionState) ([]byte, error) {
	if cs.Version != tls.VersionTLS13 {
		return nil, errors.New("raft: the operator plane needs TLS 1.3")
	}
	material, err := cs.ExportKeyingMaterial(operatorExporterLabel, nil, 32)
	if err != nil {
		return nil, fmt.Errorf("raft: export keying material: %w", err)
	}
	return material, nil
}

// withOperatorPlane lets the cluster listener's TLS configuration base also accept operator
// connections: a client offering alpnOperator gets a configuration that asks for no client
// certificate and agrees on alpnOperator only; every other client gets base unchanged.
func withOperatorPlane(base *tls.Config) *tls.Config {
	op := base.Clone()
	op.ClientAuth = tls.NoClientCert
	op.VerifyPeerCertificate = nil
	op.NextProtos = []string{alpnOperator}
	base.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if slices.Contains(hello.SupportedProtos, alpnOperator) {
			return op, nil
		}
		return nil, nil
	}
	return base
}

// serveOperator runs one operator connection: the proof, then calls until the client closes,
// the connection idles or ctx (the listener's) ends.
func (s *Store) serveOperator(ctx context.Context, conn *tls.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if !s.operatorAuthenticate(conn) {
		return
	}
	for {
		conn.SetReadDeadline(time.Now().Add(operatorIdle))
		var req operatorRequest
		if err := readFrame(conn, &req); err != nil {
			return
		}
		conn.SetReadDeadline(time.Time{})
		timeout := time.Duration(req.TimeoutMS) * time.Millisecond
		if timeout <= 0 || timeout > operatorMaxCall {
			timeout = rpcDefaultTimeout
		}
		callCtx, cancel := context.WithTimeout(ctx, timeout)
		var err error
		if req.Op == operatorBackup {
			conn.SetWriteDeadline(time.Now().Add(timeout))
			err = s.serveBackup(callCtx, conn, &req)
		} else {
			resp := s.handleOperator(callCtx, &req)
			conn.SetWriteDeadline(time.Now().Add(operatorAuthTimeout))
			err = writeFrame(conn, resp)
		}
		cancel()
		if err != nil {
			return
		}
		conn.SetWriteDeadline(time.Time{})
	}
}

// operatorAuthenticate checks the client's proof; the node's is its certificate.
func (s *Store) operatorAuthenticate(conn *tls.Conn) bool {
	conn.SetDeadline(time.Now().Add(operatorAuthTimeout))
	defer conn.SetDeadline(time.Time{})
	var req operatorRequest
	if err := readFrame(conn, &req); err != nil {
		return false
	}
	material, err := sessionMaterial(conn.ConnectionState())
	if err != nil || req.Op != operatorAuth {
		writeFrame(conn, &operatorResponse{Code: codeBadRequest, Error: "the first call must be auth"})
		return false
	}
	if s.cfg.Identity.VerifyOperator(material, req.Sigs) {
		return writeFrame(conn, &operatorResponse{}) == nil
	}
	s.logger.Warn("operator connection refused: no signature by a CA of the cluster", "remote", conn.RemoteAddr())
	writeFrame(conn, &operatorResponse{Code: codeUnauthorized, Error: ErrOperatorRefused.Error()})
	return false
}

// handleOperator answers one authenticated operator call.
func (s *Store) handleOperator(ctx context.Context, req *operatorRequest) *operatorResponse {
	switch req.Op {
	case operatorStatus:
		return &operatorResponse{Status: s.clusterStatus(ctx)}
	case operatorRemove:
		if req.Node == "" {
			return &operatorResponse{Code: codeBadRequest, Error: "remove needs a node"}
		}
		return s.onLeader(ctx, opOperatorRemove, req)
	case operatorTransfer:
		return s.onLeader(ctx, opOperatorTransfer, req)
	default:
		return &operatorResponse{Code: codeBadRequest, Error: fmt.Sprintf("unknown operator call %q", req.Op)}
	}
}

// onLeader runs a membership call here when this node leads, else at the leader over the
// cluster RPC.
func (s *Store) onLeader(ctx context.Context, op string, req *operatorRequest) *operatorResponse {
	if s.raft.State() == hraft.Leader {
		return s.leaderOperatorCall(ctx, op, req)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return &operatorResponse{Code: codeFailed, Error: err.Error()}
	}
	resp, err := s.callLeader(ctx, &rpcRequest{Op: op, Body: body})
	if err != nil {
		return &operatorResponse{Code: codeFailed, Error: err.Error()}
	}
	var out operatorResponse
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return &operatorResponse{Code: codeFailed, Error: fmt.Sprintf("the leader's answer: %v", err)}
	}
	return &out
}

// handleOperatorRPC answers the operator plane's calls between nodes; nil for another op.
func (s *Store) handleOperatorRPC(ctx context.Context, req *rpcRequest) *rpcResponse {
	var out any
	switch req.Op {
	case opNodeReport:
		var body statusRequest
		if err := json.Unmarshal(req.Body, &body); err != nil || body.Node != s.cfg.NodeID {
			return &rpcResponse{Code: codeBadRequest, Error: fmt.Sprintf("node report of %q asked of node %q", body.Node, s.cfg.NodeID)}
		}
		out = s.localReport(ctx)
	case opOperatorRemove, opOperatorTransfer:
		if s.raft.State() != hraft.Leader {
			return s.errorResponse(s.notLeaderError(req.Op))
		}
		var body operatorRequest
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return &rpcResponse{Code: codeBadRequest, Error: fmt.Sprintf("%s: %v", req.Op, err)}
		}
		out = s.leaderOperatorCall(ctx, req.Op, &body)
	default:
		return nil
	}
	body, err := json.Marshal(out)
	if err != nil {
		return &rpcResponse{Code: codeFailed, Error: err.Error()}
	}
	return &rpcResponse{Body: body}
}

// leaderOperatorCall runs remove or transfer on this node, the leader.
func (s *Store) leaderOperatorCall(ctx context.Context, op string, req *operatorRequest) *operatorResponse {
	var err error
	switch op {
	case opOperatorRemove:
		err = s.operatorRemove(ctx, req.Node)
	case opOperatorTransfer:
		err = s.operatorTransfer(ctx, req.Node)
	}
	if err != nil {
		return &operatorResponse{Code: codeFailed, Error: err.Error()}
	}
	// After a transfer this node learns the new leader from its first heartbeat.
	if err := s.WaitForLeader(ctx); err != nil {
		return &operatorResponse{Code: codeFailed, Error: err.Error()}
	}
	_, leader := s.raft.LeaderWithID()
	return &operatorResponse{Leader: string(leader)}
}

// operatorRemove removes a server that gossip does not see alive from the configuration, then
// lets the node layer purge its sessions, as reconcile does after DeadNodeGrace. A live member
// is refused: reconcile would add it back at once.
func (s *Store) operatorRemove(ctx context.Context, node string) error {
	if node == s.cfg.NodeID {
		return fmt.Errorf("node %s is the leader: transfer leadership first", node)
	}
	var found *Member
	for _, m := range s.Members() {
		if m.NodeID == node {
			found = &m
			break
		}
	}
	switch {
	case found == nil || found.Suffrage == NotInConfiguration:
		return fmt.Errorf("node %q is not a server of the raft configuration", node)
	case found.State == MemberAlive:
		return fmt.Errorf("node %s is alive in gossip and would be added back at once: stop it first", node)
	}
	if err := waitFuture(ctx, s.raft.RemoveServer(hraft.ServerID(node), 0, configChangeTimeout)); err != nil {
		return fmt.Errorf("remove %s: %w", node, err)
	}
	s.logger.Warn("raft configuration: server removed by the operator", "member", node, "suffrage", string(found.Suffrage))
	if s.cfg.OnNodeRemoved != nil {
		s.cfg.OnNodeRemoved(node)
	}
	return nil
}

// operatorTransfer hands leadership to node (any up-to-date voter when empty) and waits until
// raft reports the transfer done.
func (s *Store) operatorTransfer(ctx context.Context, node string) error {
	var future hraft.Future
	if node == "" {
		future = s.raft.LeadershipTransfer()
	} else {
		if node == s.cfg.NodeID {
			return nil
		}
		configuration, ok := s.configuration()
		if !ok {
			return ErrClosed
		}
		i := slices.IndexFunc(configuration.Servers, func(srv hraft.Server) bool { return string(srv.ID) == node })
		if i < 0 || configuration.Servers[i].Suffrage != hraft.Voter {
			return fmt.Errorf("node %q is not a voter: only a voter can lead", node)
		}
		future = s.raft.LeadershipTransferToServer(configuration.Servers[i].ID, configuration.Servers[i].Address)
	}
	if err := waitFuture(ctx, future); err != nil {
		return fmt.Errorf("transfer leadership: %w", err)
	}
	s.logger.Info("leadership transferred by the operator", "to", node)
	return nil
}

// localReport is this node's own report, without the fields only the node asked can fill
// (gossip state, suffrage, lag, exchange behind).
func (s *Store) localReport(ctx context.Context) NodeReport {
	st := s.Status()
	r := NodeReport{Node: s.cfg.NodeID, RaftAddr: s.Addr(), ClusterAddr: s.rpcAddr, Role: st.Role, Term: st.Term,
		AppliedIndex: st.AppliedIndex, CommitIndex: st.CommitIndex, LastLogIndex: st.LastLogIndex, LastContactMS: -1}
	switch last := s.raft.LastContact(); {
	case st.Role == "leader":
		r.LastContactMS = 0
	case !last.IsZero():
		r.LastContactMS = time.Since(last).Milliseconds()
	}
	if f := s.operator.extra.Load(); f != nil {
		r.NodeExtra = (*f)(ctx)
	}
	return r
}

// clusterStatus asks every member for its report (this one locally) and fills in what only the
// whole picture gives.
func (s *Store) clusterStatus(ctx context.Context) *ClusterStatus {
	st := s.Status()
	out := &ClusterStatus{ClusterID: st.ClusterID, AskedNode: s.cfg.NodeID, Leader: st.LeaderID, Term: st.Term, Voters: st.Voters}
	members := s.Members()
	out.Nodes = make([]NodeReport, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			var r NodeReport
			if m.Self {
				r = s.localReport(ctx)
			} else {
				r = s.remoteReport(ctx, m)
			}
			r.Node, r.Gossip, r.Suffrage = m.NodeID, string(m.State), string(m.Suffrage)
			if r.Suffrage == "" {
				r.Suffrage = "none"
			}
			if r.RaftAddr == "" {
				r.RaftAddr = m.RaftAddr
			}
			if r.ClusterAddr == "" {
				r.ClusterAddr = m.ClusterAddr
			}
			out.Nodes[i] = r
		})
	}
	wg.Wait()
	fillDerived(out.Nodes, out.Leader)
	return out
}

// remoteReport asks member m for its report over the cluster RPC.
func (s *Store) remoteReport(ctx context.Context, m Member) NodeReport {
	r := NodeReport{Role: "unreachable", LastContactMS: -1, ExchangeBehind: -1}
	if m.ClusterAddr == "" || m.State != MemberAlive {
		r.Error = "not alive in gossip"
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, nodeReportTimeout)
	defer cancel()
	body, err := json.Marshal(statusRequest{Node: m.NodeID})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	resp, err := s.rpcClient.call(ctx, m.ClusterAddr, &rpcRequest{Op: opNodeReport, Cluster: s.ClusterID(), From: s.cfg.NodeID, Body: body})
	switch {
	case err != nil:
		r.Error = err.Error()
	case resp.Code == codeBadRequest && len(resp.Body) == 0:
		r.Error = "does not report (an older version?): " + resp.Error
	case resp.Code != "":
		r.Error = resp.Code + ": " + resp.Error
	default:
		if err := json.Unmarshal(resp.Body, &r); err != nil {
			r.Error = "bad report: " + err.Error()
		}
	}
	return r
}

// fillDerived computes each node's lag and exchange position from all the reports.
func fillDerived(nodes []NodeReport, leader string) {
	var leaderApplied uint64
	heads := map[string]int64{}
	for _, n := range nodes {
		if n.Role == "unreachable" {
			continue
		}
		if n.Node == leader {
			leaderApplied = n.AppliedIndex
		}
		heads[n.Node] = n.LogHead
	}
	if leaderApplied == 0 {
		for _, n := range nodes {
			leaderApplied = max(leaderApplied, n.AppliedIndex)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Role == "unreachable" {
			n.ExchangeBehind = -1
			continue
		}
		if leaderApplied > n.AppliedIndex {
			n.Lag = leaderApplied - n.AppliedIndex
		}
		n.ExchangeBehind = 0
		for origin, head := range heads {
			if origin != n.Node && head > n.InCursors[origin] {
				n.ExchangeBehind += head - n.InCursors[origin]
			}
		}
	}
}

// LeaderContact is how long ago this node last heard from a leader: 0 on the leader; ok is false
// when it never did.
func (s *Store) LeaderContact() (ago time.Duration, ok bool) {
	if s.raft.State() == hraft.Leader {
		return 0, true
	}
	last := s.raft.LastContact()
	if last.IsZero() {
		return 0, false
	}
	return time.Since(last), true
}

// CertificateExpiry is when this node's current cluster certificate ends; ok is false when the
// node has no cluster identity.
func (s *Store) CertificateExpiry() (notAfter time.Time, ok bool) {
	if s.cfg.Identity == nil {
		return time.Time{}, false
	}
	cert, err := s.cfg.Identity.Certificate()
	if err != nil || cert.Leaf == nil {
		return time.Time{}, false
	}
	return cert.Leaf.NotAfter, true
}
