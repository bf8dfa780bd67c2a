package raft

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []any{
		&rpcRequest{Op: opPropose, Cluster: "c", From: "n1", TimeoutMS: 250, Body: []byte{0, 1, 2, 0xff}},
		&rpcRequest{Op: opReadIndex, Cluster: "c", From: "n2"},
		&rpcResponse{Index: 42},
		&rpcResponse{Code: codeNotLeader, Error: "not the leader", LeaderID: "n3", LeaderAddr: "n3"},
	}
	for _, want := range tests {
		var buf bytes.Buffer
		if err := writeFrame(&buf, want); err != nil {
			t.Fatalf("writeFrame(%+v): %v", want, err)
		}
		var got any
		switch want.(type) {
		case *rpcRequest:
			got = &rpcRequest{}
		default:
			got = &rpcResponse{}
		}
		if err := readFrame(&buf, got); err != nil {
			t.Fatalf("readFrame: %v", err)
		}
		if !equalJSON(t, got, want) {
			t.Fatalf("round trip = %+v, want %+v", got, want)
		}
		if buf.Len() != 0 {
			t.Fatalf("%d bytes left after one frame", buf.Len())
		}
	}
}

func TestReadFrameErrors(t *testing.T) {
	frame := func(length uint32, body string) []byte {
		out := binary.BigEndian.AppendUint32(nil, length)
		return append(out, body...)
	}
	tests := []struct {
		name    string
		data    []byte
		wantEOF bool
		wantBad bool
	}{
		{name: "closed between frames", data: nil, wantEOF: true},
		{name: "short header", data: []byte{0, 0}},
		{name: "zero length", data: frame(0, ""), wantBad: true},
		{name: "length over the limit", data: frame(maxFrame+1, "{}"), wantBad: true},
		{name: "body cut short", data: frame(10, `{"op"`)},
		{name: "body not JSON", data: frame(3, "abc"), wantBad: true},
		{name: "wrong JSON type", data: frame(2, "[]"), wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req rpcRequest
			err := readFrame(bytes.NewReader(tt.data), &req)
			if err == nil {
				t.Fatal("readFrame succeeded")
			}
			if got := err == io.EOF; got != tt.wantEOF {
				t.Fatalf("readFrame = %v, want io.EOF: %v", err, tt.wantEOF)
			}
			if got := errors.Is(err, errBadFrame); got != tt.wantBad {
				t.Fatalf("readFrame = %v, want errBadFrame: %v", err, tt.wantBad)
			}
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	writeFrame(&buf, &rpcRequest{Op: opPropose, Cluster: "c", Body: []byte("x")})
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req rpcRequest
		if err := readFrame(bytes.NewReader(data), &req); err != nil {
			return
		}
		var out bytes.Buffer
		if err := writeFrame(&out, &req); err != nil {
			t.Fatalf("a frame that decoded does not encode: %v", err)
		}
		var again rpcRequest
		if err := readFrame(&out, &again); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !equalJSON(t, &again, &req) {
			t.Fatalf("round trip changed %+v into %+v", req, again)
		}
	})
}

func TestNodeMetaRoundTrip(t *testing.T) {
	want := nodeMeta{RaftAddr: "127.0.0.1:6670", RPCAddr: "127.0.0.1:6672", ClusterID: "ABC",
		Meta: map[string]string{"http": "127.0.0.1:8080", "did": "did:web:node-a.example.org"}}
	data, err := encodeNodeMeta(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeNodeMeta(data)
	want.Version = nodeMetaVersion
	if err != nil || !equalJSON(t, got, want) {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, want)
	}
	if _, err := encodeNodeMeta(nodeMeta{Meta: map[string]string{"x": strings.Repeat("y", 600)}}); err == nil {
		t.Fatal("metadata over memberlist's limit encoded")
	}
	for _, bad := range []string{"", "{", `{"v":0,"r":"x"}`, `[]`, `{"v":"one"}`} {
		if _, err := decodeNodeMeta([]byte(bad)); !errors.Is(err, errBadNodeMeta) {
			t.Errorf("decode(%q) = %v, want errBadNodeMeta", bad, err)
		}
	}
	// A newer node's metadata still yields the fields this version reads.
	if got, err := decodeNodeMeta([]byte(`{"v":2,"r":"a","c":"b","extra":true}`)); err != nil || got.RaftAddr != "a" || got.RPCAddr != "b" {
		t.Fatalf("newer metadata = %+v, %v", got, err)
	}
}

func FuzzDecodeNodeMeta(f *testing.F) {
	data, _ := encodeNodeMeta(nodeMeta{RaftAddr: "r", RPCAddr: "c", ClusterID: "id", Meta: map[string]string{"k": "v"}})
	f.Add(data)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeNodeMeta(data)
		if err != nil {
			if !errors.Is(err, errBadNodeMeta) {
				t.Fatalf("error %v does not wrap errBadNodeMeta", err)
			}
			return
		}
		if m.Version < nodeMetaVersion {
			t.Fatalf("accepted version %d", m.Version)
		}
	})
}

func TestHandleRPCRefusals(t *testing.T) {
	c := newTestCluster(t)
	n := c.start("n1")
	c.waitLeader()
	clusterID := n.store.ClusterID()
	tests := []struct {
		name     string
		peer     string
		req      rpcRequest
		wantCode string
	}{
		{"another cluster", "n1", rpcRequest{Op: opPropose, Cluster: "not-" + clusterID, Body: []byte("a|b")}, codeClusterMismatch},
		{"no cluster", "n1", rpcRequest{Op: opReadIndex}, codeClusterMismatch},
		{"unknown operation", "n1", rpcRequest{Op: "launch", Cluster: clusterID}, codeBadRequest},
		{"read index", "n1", rpcRequest{Op: opReadIndex, Cluster: clusterID, TimeoutMS: 5000}, ""},
		{"caller not in the configuration", "n9", rpcRequest{Op: opPropose, Cluster: clusterID, From: "n1", Body: []byte("a|b")}, codeForbidden},
		{"caller without identity", "", rpcRequest{Op: opReadIndex, Cluster: clusterID, From: "n1"}, codeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := n.store.handleRPC(testContext(t), tt.peer, &tt.req)
			if resp.Code != tt.wantCode {
				t.Fatalf("code = %q (%s), want %q", resp.Code, resp.Error, tt.wantCode)
			}
		})
	}
}

func TestResponseErrors(t *testing.T) {
	tests := []struct {
		resp      rpcResponse
		wantIs    error
		retriable bool
	}{
		{rpcResponse{Index: 3}, nil, false},
		{rpcResponse{Code: codeNotLeader, LeaderID: "n2"}, ErrNotLeader, true},
		{rpcResponse{Code: codeLeadershipLost}, ErrLeadershipLost, true},
		{rpcResponse{Code: codeClosed}, errForwardFailed, true},
		{rpcResponse{Code: codeTimeout}, errForwardFailed, true},
		{rpcResponse{Code: codeClusterMismatch}, ErrClusterMismatch, false},
		{rpcResponse{Code: codeForbidden}, errForwardFailed, true},
		{rpcResponse{Code: codeBadRequest, Error: "unknown operation"}, nil, false},
		{rpcResponse{Code: "from-the-future", Error: "?"}, nil, false},
	}
	for _, tt := range tests {
		err := responseError("op", &tt.resp)
		if tt.resp.Code == "" {
			if err != nil {
				t.Errorf("success answer gave %v", err)
			}
			continue
		}
		if err == nil {
			t.Errorf("code %q gave no error", tt.resp.Code)
			continue
		}
		if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
			t.Errorf("code %q = %v, want %v", tt.resp.Code, err, tt.wantIs)
		}
		if retriable(err) != tt.retriable {
			t.Errorf("code %q retriable = %v", tt.resp.Code, retriable(err))
		}
	}
	var notLeader *NotLeaderError
	if err := responseError("op", &rpcResponse{Code: codeNotLeader, LeaderID: "n2", LeaderAddr: "a2"}); !errors.As(err, &notLeader) || notLeader.LeaderID != "n2" {
		t.Fatalf("not-leader answer lost its hint: %v", err)
	}
}

func TestRPCClientReusesAndRecovers(t *testing.T) {
	network := NewInmemNetwork()
	listener, err := network.openListener("server", "server:cluster")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Uint64
	server := newRPCServer(listener, func(ctx context.Context, _ string, req *rpcRequest) *rpcResponse {
		n := calls.Add(1)
		if req.Op == "drop" {
			return nil
		}
		return &rpcResponse{Index: n}
	}, testLogger())
	server.start()
	t.Cleanup(func() { server.close() })
	client := newRPCClient(func(ctx context.Context, addr string) (net.Conn, error) {
		return network.dialCluster(ctx, "client", addr)
	})
	t.Cleanup(client.close)

	for want := uint64(1); want <= 3; want++ {
		resp, err := client.call(testContext(t), "server:cluster", &rpcRequest{Op: "echo"})
		if err != nil || resp.Index != want {
			t.Fatalf("call %d = %+v, %v", want, resp, err)
		}
	}
	if n := len(client.idle["server:cluster"]); n != 1 {
		t.Fatalf("%d idle connections after sequential calls, want 1 reused", n)
	}
	if _, err := client.call(testContext(t), "server:cluster", &rpcRequest{Op: "drop"}); err == nil {
		t.Fatal("a dropped answer was not an error")
	}
	if resp, err := client.call(testContext(t), "server:cluster", &rpcRequest{Op: "echo"}); err != nil || resp.Index != 5 {
		t.Fatalf("call after a dropped connection = %+v, %v", resp, err)
	}

	network.Partition("client", "server")
	if _, err := client.call(testContext(t), "server:cluster", &rpcRequest{Op: "echo"}); err == nil {
		t.Fatal("a call crossed a partition")
	}
	network.Heal("client", "server")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := client.call(ctx, "nowhere:cluster", &rpcRequest{Op: "echo"}); err == nil {
		t.Fatal("a call to an unknown address succeeded")
	}
}

func TestPartitionClosesOpenConnections(t *testing.T) {
	network := NewInmemNetwork()
	listener, err := network.openListener("b", "b:cluster")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := listener.Accept(); err == nil {
			accepted <- conn
		}
	}()
	conn, err := network.dialCluster(testContext(t), "a", "b:cluster")
	if err != nil {
		t.Fatal(err)
	}
	remote := <-accepted
	network.Partition("a", "b")
	if _, err := remote.Read(make([]byte, 1)); err == nil {
		t.Fatal("read on a partitioned connection succeeded")
	}
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Fatal("write on a partitioned connection succeeded")
	}
	if !network.Partitioned("a", "b") || network.Partitioned("a", "c") {
		t.Fatal("Partitioned does not report the cut")
	}
	if _, err := network.dialCluster(testContext(t), "a", "b:cluster"); !errors.Is(err, errNoRoute) {
		t.Fatalf("dial across a partition = %v, want errNoRoute", err)
	}
}

// equalJSON compares two values by their JSON encoding.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	var x, y bytes.Buffer
	if err := writeFrame(&x, a); err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(&y, b); err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}
