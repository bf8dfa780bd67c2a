package raft

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The cluster RPC is a request/response protocol over one stream (TCP, or
// an in-process pipe with a Network). Each message is a frame: a 4-byte
// big-endian length, then that many bytes of JSON (an rpcRequest from the
// dialer, an rpcResponse back). A connection carries one call at a time;
// the client keeps idle connections per address for the next call.
// net/rpc was not used because its gob encoding is Go-only and it has no
// per-call deadline; the protocol is small enough to write down here.

// maxFrame bounds a frame so that a corrupt length cannot make the reader
// allocate without limit; a raft entry is far smaller.
const maxFrame = 16 << 20

// RPC operations; a node answers an op it does not know with
// codeBadRequest, so new ones can be added in a rolling upgrade.
const (
	opPropose   = "propose"    // body: a log entry; answer: its index once applied on the leader
	opReadIndex = "read_index" // answer: the index a linearizable read must wait for
)

// rpcRequest is one call.
type rpcRequest struct {
	Op string `json:"op"`
	// Cluster is the caller's cluster id; a node of another cluster refuses
	// the call.
	Cluster string `json:"cluster"`
	From    string `json:"from"`
	// TimeoutMS is how long the caller waits; the handler gives up then.
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	Body      []byte `json:"body,omitempty"`
}

// rpcResponse is one answer: an index, or an error with a code.
type rpcResponse struct {
	Index      uint64 `json:"index,omitempty"`
	Code       string `json:"code,omitempty"`
	Error      string `json:"error,omitempty"`
	LeaderID   string `json:"leader_id,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
	// Body is an operation's structured answer (the operator plane's, operator.go).
	Body json.RawMessage `json:"body,omitempty"`
}

// Response codes; an empty code is success.
const (
	codeNotLeader       = "not_leader"       // retry at LeaderID, when given
	codeLeadershipLost  = "leadership_lost"  // outcome unknown; retry (request ids make it safe)
	codeClosed          = "closed"           // the node is shutting down; retry elsewhere
	codeTimeout         = "timeout"          // the handler's deadline passed
	codeClusterMismatch = "cluster_mismatch" // the caller belongs to another cluster
	codeBadRequest      = "bad_request"      // unknown op or malformed call
	codeForbidden       = "forbidden"        // the caller is not a server of the raft configuration
	codeUpgrading       = "upgrading"        // the entry is above a server's feature level (ErrClusterUpgrading)
	codeFailed          = "failed"           // any other error
)

var errBadFrame = errors.New("raft: bad cluster RPC frame")

// writeFrame writes v as one frame in a single Write.
func writeFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("raft: encode cluster RPC frame: %w", err)
	}
	if len(body) > maxFrame {
		return fmt.Errorf("%w: %d bytes exceeds %d", errBadFrame, len(body), maxFrame)
	}
	frame := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("raft: write cluster RPC frame: %w", err)
	}
	return nil
}

// readFrame reads one frame into v. io.EOF before the first byte is
// returned as is: the peer closed between calls.
func readFrame(r io.Reader, v any) error {
	var header [4]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("raft: read cluster RPC frame: %w", err)
	}
	size := binary.BigEndian.Uint32(header[:])
	if size == 0 || size > maxFrame {
		return fmt.Errorf("%w: length %d", errBadFrame, size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("raft: read cluster RPC frame body: %w", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", errBadFrame, err)
	}
	return nil
}
