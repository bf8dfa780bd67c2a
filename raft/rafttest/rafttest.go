package rafttest

import (
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
	hraft "github.com/hashicorp/raft"
)

// Timeout bounds every attempt.
const Timeout = 5 * time.Second

// dialLayer is a raft stream layer that only dials: in the clear when tls is nil, else over TLS
// with that configuration.
type dialLayer struct {
	net.Listener
	tls *tls.Config
	src string // the local IP to dial from; "" any
}

func (l *dialLayer) Dial(address hraft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	dialer := &net.Dialer{Timeout: timeout}
	if l.src != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(l.src)}
	}
	if l.tls == nil {
		return dialer.Dial("tcp", string(address))
	}
	return tls.DialWithDialer(dialer, "tcp", string(address), l.tls)
}

// transport is a NetworkTransport of an attacker at a loopback port.
func transport(tlsConfig *tls.Config, src string) (*hraft.NetworkTransport, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return hraft.NewNetworkTransport(&dialLayer{Listener: ln, tls: tlsConfig, src: src}, 1, Timeout, io.Discard), nil
}

// AppendEntries sends the raft server at addr one AppendEntries as the leader "attacker" of
// term, whose entries (after prevIndex/prevTerm) are the given state machine commands and whose
// commit index covers them all. tlsConfig nil sends it in the clear.
func AppendEntries(addr string, tlsConfig *tls.Config, term, prevIndex, prevTerm uint64, commands [][]byte) error {
	return AppendEntriesFrom("", addr, tlsConfig, term, prevIndex, prevTerm, commands)
}

// AppendEntriesFrom is AppendEntries dialled from the local IP src (another loopback address
// plays another host).
func AppendEntriesFrom(src, addr string, tlsConfig *tls.Config, term, prevIndex, prevTerm uint64, commands [][]byte) error {
	t, err := transport(tlsConfig, src)
	if err != nil {
		return err
	}
	defer t.Close()
	req := &hraft.AppendEntriesRequest{
		RPCHeader: hraft.RPCHeader{ProtocolVersion: hraft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte(t.LocalAddr())},
		Term:      term, PrevLogEntry: prevIndex, PrevLogTerm: prevTerm,
		LeaderCommitIndex: prevIndex + uint64(len(commands)),
	}
	for i, c := range commands {
		req.Entries = append(req.Entries, &hraft.Log{Index: prevIndex + uint64(i) + 1, Term: term, Type: hraft.LogCommand, Data: c})
	}
	var resp hraft.AppendEntriesResponse
	if err := t.AppendEntries("target", hraft.ServerAddress(addr), req, &resp); err != nil {
		return err
	}
	if !resp.Success {
		return fmt.Errorf("rafttest: AppendEntries answered, not applied (term %d)", resp.Term)
	}
	return nil
}

// RequestVote asks the raft server at addr for its vote in term, as candidate "attacker"; it
// returns whether the vote was granted.
func RequestVote(addr string, tlsConfig *tls.Config, term uint64) (bool, error) {
	t, err := transport(tlsConfig, "")
	if err != nil {
		return false, err
	}
	defer t.Close()
	req := &hraft.RequestVoteRequest{
		RPCHeader: hraft.RPCHeader{ProtocolVersion: hraft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte(t.LocalAddr())},
		Term:      term, LastLogIndex: 1 << 40, LastLogTerm: term,
	}
	var resp hraft.RequestVoteResponse
	if err := t.RequestVote("target", hraft.ServerAddress(addr), req, &resp); err != nil {
		return false, err
	}
	return resp.Granted, nil
}

// metaDelegate announces fixed metadata.
type metaDelegate struct{ meta []byte }

func (d metaDelegate) NodeMeta(int) []byte           { return d.meta }
func (metaDelegate) NotifyMsg([]byte)                {}
func (metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (metaDelegate) LocalState(bool) []byte          { return nil }
func (metaDelegate) MergeRemoteState([]byte, bool)   {}

// GossipJoin joins the gossip of the member at seed as node "attacker", announcing meta, with
// key (nil: in the clear) as its only gossip key. It returns how many members it reached and
// the names of the members it learned of besides itself, then leaves.
func GossipJoin(seed string, key, meta []byte) (contacted int, learned []string, err error) {
	mc := memberlist.DefaultLocalConfig()
	mc.Name = "attacker"
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = "127.0.0.1", 0, 0
	mc.TCPTimeout = Timeout
	mc.Logger = log.New(io.Discard, "", 0)
	mc.Delegate = metaDelegate{meta: meta}
	if key != nil {
		if mc.Keyring, err = memberlist.NewKeyring(nil, key); err != nil {
			return 0, nil, err
		}
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return 0, nil, err
	}
	defer ml.Shutdown()
	contacted, err = ml.Join([]string{seed})
	for _, m := range ml.Members() {
		if m.Name != mc.Name {
			learned = append(learned, m.Name)
		}
	}
	return contacted, learned, err
}

// RPC sends one cluster RPC call ({"op","cluster","from","body"}) to addr, in the clear when
// tlsConfig is nil, and returns the answer's code ("" is success) and error text.
func RPC(addr string, tlsConfig *tls.Config, op, clusterID, from string, body []byte) (code, text string, err error) {
	dialer := &net.Dialer{Timeout: Timeout}
	var conn net.Conn
	if tlsConfig == nil {
		conn, err = dialer.Dial("tcp", addr)
	} else {
		conn, err = tls.DialWithDialer(dialer, "tcp", addr, tlsConfig)
	}
	if err != nil {
		return "", "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(Timeout))
	frame, err := json.Marshal(map[string]any{"op": op, "cluster": clusterID, "from": from, "timeout_ms": 2000, "body": body})
	if err != nil {
		return "", "", err
	}
	if _, err := conn.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame)))); err != nil {
		return "", "", err
	}
	if _, err := conn.Write(frame); err != nil {
		return "", "", err
	}
	var header [4]byte
	if _, err := io.ReadFull(conn, header[:]); err != nil {
		return "", "", err
	}
	size := binary.BigEndian.Uint32(header[:])
	if size > 1<<20 {
		return "", "", errors.New("rafttest: answer too large")
	}
	answer := make([]byte, size)
	if _, err := io.ReadFull(conn, answer); err != nil {
		return "", "", err
	}
	var resp struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return "", "", err
	}
	return resp.Code, resp.Error, nil
}
