package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/rafttest"
	"github.com/palaver-chat/palaver/raft/trust"
)

// attackerDID is who the forged commands act for; a node that applied one would list its
// favourites.
const attackerDID = "did:plc:attackerattackerattack"

// selfSignedConfig is a TLS client configuration with a self-signed certificate that claims to
// be node, offering proto in ALPN and checking nothing about the server.
func selfSignedConfig(t *testing.T, node, proto string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: node},
		URIs: []*url.URL{trust.NodeURI(node)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		InsecureSkipVerify: true, NextProtos: []string{proto}, MinVersion: tls.VersionTLS12}
}

// identityConfig is a TLS client configuration presenting id's certificate, offering proto and
// checking nothing about the server (an attacker does not care who answers).
func identityConfig(t *testing.T, id *trust.Identity, proto string) *tls.Config {
	t.Helper()
	cert, err := id.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{*cert}, InsecureSkipVerify: true, NextProtos: []string{proto}}
}

func newIdentity(t *testing.T, secret *trust.Secret, node string) *trust.Identity {
	t.Helper()
	id, err := trust.NewIdentity(secret, node)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// forgedCommand is a state machine command an attacker would like applied.
func forgedCommand(t *testing.T) []byte {
	t.Helper()
	data, err := fsm.Encode(fsm.SetFavorites{DID: attackerDID, Favorites: []string{"#pwned"}}, "forged-"+rand.Text(), "attacker", time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHostileProcessGetsNothing plays a process on the same network without the cluster secret
// against a three-node cluster on real sockets: raft AppendEntries and RequestVote (in the clear,
// with a self-signed certificate, with a certificate of another cluster), gossip joins (without a
// key, with a forged cluster id, with another cluster's key), cluster RPC proposals, event
// exchange pushes and pulls on the cluster port and on the public port. Each is refused, nothing
// is applied, nothing reaches the attacker, and the cluster keeps serving IRC. A node holding the
// secret joins; a node with another secret cannot.
func TestHostileProcessGetsNothing(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	clusterID := a.raft.ClusterID()
	foreign, err := trust.Generate()
	if err != nil {
		t.Fatal(err)
	}
	foreignAsA := newIdentity(t, foreign, a.cfg.NodeName) // another cluster's CA, a member's name
	secret, err := trust.Load(secretOf(a))
	if err != nil {
		t.Fatal(err)
	}
	// Holds the secret but is not a server of the configuration: the RPC and the exchange still
	// refuse it (the configuration decides, not the certificate alone).
	intruder := newIdentity(t, secret, "intruder.test")
	// A certificate minted with the secret in a member's name, for another key than the one the
	// cluster pinned the member to.
	memberCert := newIdentity(t, secret, b.cfg.NodeName)
	waitPinned(t, nodes)

	type attempt struct {
		name string
		try  func(target *Node) error // nil error: the attack got through
	}
	raftAppend := func(cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			st := target.raft.Status()
			return rafttest.AppendEntries(target.raft.Addr(), cfg(), st.Term+1, target.raft.AppliedIndex(), st.Term, [][]byte{forgedCommand(t)})
		}
	}
	// raftAppendFrom is raftAppend from another host (127.0.0.2; every node is on 127.0.0.1).
	raftAppendFrom := func(cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			st := target.raft.Status()
			return rafttest.AppendEntriesFrom("127.0.0.2", target.raft.Addr(), cfg(), st.Term+1, target.raft.AppliedIndex(), st.Term, [][]byte{forgedCommand(t)})
		}
	}
	raftVote := func(cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			granted, err := rafttest.RequestVote(target.raft.Addr(), cfg(), target.raft.Status().Term+100)
			if err == nil && !granted {
				return fmt.Errorf("vote answered and refused")
			}
			return err
		}
	}
	gossip := func(key []byte, meta string) func(*Node) error {
		return func(target *Node) error {
			contacted, learned, err := rafttest.GossipJoin(target.GossipAddr(), key, []byte(meta))
			if contacted > 0 || len(learned) > 0 {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("joined nobody")
			}
			return err
		}
	}
	forgedMeta := func(target *Node) string {
		return fmt.Sprintf(`{"v":1,"r":"127.0.0.1:1","c":"127.0.0.1:2","id":%q,"m":{"did":"did:web:attacker"}}`, clusterID)
	}
	rpc := func(cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			for _, op := range []string{"propose", "read_index"} {
				code, text, err := rafttest.RPC(target.raft.ClusterAddr(), cfg(), op, clusterID, target.cfg.NodeName, forgedCommand(t))
				if err != nil {
					return err
				}
				if code == "" || code == "not_leader" {
					return nil // accepted (or would have been by the leader)
				}
				if !strings.Contains(text, "not a server") {
					return fmt.Errorf("refused for another reason: %s %s", code, text)
				}
			}
			return fmt.Errorf("refused: not a server")
		}
	}
	exchange := func(base func(*Node) string, cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			client := &http.Client{Timeout: rafttest.Timeout, Transport: &http.Transport{TLSClientConfig: cfg()}}
			defer client.CloseIdleConnections()
			batch := fmt.Sprintf(`{"origin":%q,"events":[{"origin_seq":1,"msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","venue":"#ops","command":"PRIVMSG","sender":"x!u@h","sender_nick":"x","text":"forged","time_ms":1700000000000}]}`, a.ServerDID())
			for _, req := range []struct{ method, body string }{{"GET", ""}, {"POST", batch}} {
				r, _ := http.NewRequest(req.method, base(target)+"/internal/v1/events?after=0", strings.NewReader(req.body))
				resp, err := client.Do(r)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
					return fmt.Errorf("%s answered %d", req.method, resp.StatusCode)
				}
			}
			return fmt.Errorf("every request refused")
		}
	}
	// media asks for an upload's bytes on the cluster plane without a node's signature: the
	// certificate alone (even one naming a member) must not pass.
	media := func(cfg func() *tls.Config) func(*Node) error {
		return func(target *Node) error {
			client := &http.Client{Timeout: rafttest.Timeout, Transport: &http.Transport{TLSClientConfig: cfg()}}
			defer client.CloseIdleConnections()
			resp, err := client.Get("https://" + target.raft.ClusterAddr() + "/internal/v1/media/01ARZ3NDEKTSV4RRFFQ69G5FAV")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				return nil // past authentication (a 404 says it looked the id up)
			}
			return fmt.Errorf("answered %d", resp.StatusCode)
		}
	}
	clusterURL := func(scheme string) func(*Node) string {
		return func(n *Node) string { return scheme + "://" + n.raft.ClusterAddr() }
	}
	public := func(n *Node) string { return "http://" + n.HTTPAddr() }
	plain := func() *tls.Config { return nil }
	selfSigned := func(proto string) func() *tls.Config {
		return func() *tls.Config { return selfSignedConfig(t, a.cfg.NodeName, proto) }
	}
	withID := func(id *trust.Identity, proto string) func() *tls.Config {
		return func() *tls.Config { return identityConfig(t, id, proto) }
	}
	attempts := []attempt{
		{"raft AppendEntries in the clear", raftAppend(plain)},
		{"raft AppendEntries with a self-signed certificate", raftAppend(selfSigned("palaver-raft"))},
		{"raft AppendEntries with another cluster's certificate", raftAppend(withID(foreignAsA, "palaver-raft"))},
		{"raft AppendEntries from a certified node outside the configuration", raftAppend(withID(intruder, "palaver-raft"))},
		{"raft AppendEntries with a member's certificate from another host", raftAppendFrom(withID(memberCert, "palaver-raft"))},
		{"raft AppendEntries with a member's certificate minted with the secret", raftAppend(withID(memberCert, "palaver-raft"))},
		{"raft RequestVote from a certified node outside the configuration", raftVote(withID(intruder, "palaver-raft"))},
		{"raft RequestVote with a member's certificate minted with the secret", raftVote(withID(memberCert, "palaver-raft"))},
		{"raft RequestVote in the clear", raftVote(plain)},
		{"raft RequestVote with another cluster's certificate", raftVote(withID(foreignAsA, "palaver-raft"))},
		{"gossip join without a key", gossip(nil, `{"v":1,"r":"127.0.0.1:1","c":"127.0.0.1:2"}`)},
		{"gossip join without a key, forged cluster id", func(n *Node) error { return gossip(nil, forgedMeta(n))(n) }},
		{"gossip join with another cluster's key, forged cluster id", func(n *Node) error { return gossip(foreign.GossipKeys[0], forgedMeta(n))(n) }},
		{"cluster RPC in the clear", rpc(plain)},
		{"cluster RPC with a self-signed certificate", rpc(selfSigned("palaver-rpc"))},
		{"cluster RPC with another cluster's certificate", rpc(withID(foreignAsA, "palaver-rpc"))},
		{"cluster RPC from a certified node outside the configuration", rpc(withID(intruder, "palaver-rpc"))},
		{"cluster RPC with a member's certificate minted with the secret", rpc(withID(memberCert, "palaver-rpc"))},
		{"exchange in the clear on the cluster port", exchange(clusterURL("http"), plain)},
		{"exchange with another cluster's certificate", exchange(clusterURL("https"), withID(foreignAsA, "http/1.1"))},
		{"exchange from a certified node outside the configuration", exchange(clusterURL("https"), withID(intruder, "http/1.1"))},
		{"exchange with a member's certificate minted with the secret", exchange(clusterURL("https"), withID(memberCert, "http/1.1"))},
		{"exchange on the public port", exchange(public, plain)},
		{"media bytes from a certified node outside the configuration", media(withID(intruder, "http/1.1"))},
		{"media bytes with a member's certificate, unsigned", media(withID(memberCert, "http/1.1"))},
	}
	for _, at := range attempts {
		t.Run(at.name, func(t *testing.T) {
			for _, target := range nodes {
				if err := at.try(target); err == nil {
					t.Fatalf("%s: the attack got through", target.cfg.NodeName)
				} else {
					t.Logf("%s: refused: %v", target.cfg.NodeName, err)
				}
			}
		})
	}
	// Plain TCP that speaks nothing to every plane is dropped without a byte of answer.
	for _, target := range nodes {
		for _, addr := range []string{target.raft.Addr(), target.raft.ClusterAddr()} {
			conn, err := net.DialTimeout("tcp", addr, rafttest.Timeout)
			if err != nil {
				continue
			}
			conn.SetDeadline(time.Now().Add(rafttest.Timeout))
			fmt.Fprintf(conn, "GET /internal/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
			answer, _ := readAll(conn)
			conn.Close()
			if bytes.Contains(answer, []byte("HTTP/1.1 200")) || bytes.Contains(answer, []byte("origin")) {
				t.Fatalf("%s answered a plaintext request: %q", addr, answer)
			}
		}
	}

	// Nothing was applied, the attacker is no member, and the cluster still serves.
	for _, n := range nodes {
		if got := (&favorites{machine: n.machine}).Favorites(attackerDID); len(got) != 0 {
			t.Fatalf("%s applied a forged command: %v", n.cfg.NodeName, got)
		}
		for _, m := range n.raft.Members() {
			if m.NodeID == "attacker" || m.NodeID == "intruder.test" {
				t.Fatalf("%s lists %s as a member", n.cfg.NodeName, m.NodeID)
			}
		}
		if st := n.raft.Status(); st.LeaderID == "" || st.LeaderID == "attacker" {
			t.Fatalf("%s follows %q", n.cfg.NodeName, st.LeaderID)
		}
	}
	alice, bob := chatAcross(t, b, c, "#ops", "still serving")
	alice.Send("PRIVMSG bob :direct")
	expect(t, bob, "PRIVMSG", "direct")

	// A node holding the secret joins; one holding another cluster's secret cannot.
	join := func(name, secretPath string) func(*Config) {
		return func(c *Config) {
			c.NodeName, c.GossipAddr, c.ClusterAddr = name, "127.0.0.1:0", "127.0.0.1:0"
			c.Join, c.ClusterSecret = []string{a.GossipAddr()}, secretPath
		}
	}
	d := startNode(t, t.TempDir(), join("node-d.test", secretOf(a)))
	eventually(t, "node d in the configuration", func() bool {
		for _, m := range a.raft.Members() {
			if m.NodeID == d.cfg.NodeName && m.Suffrage != raft.NotInConfiguration && m.State == raft.MemberAlive {
				return true
			}
		}
		return false
	})
	dave, _ := guest(t, d, "dave")
	dave.Send("JOIN #ops")
	expect(t, dave, "366", "#ops")
	alice.Send("PRIVMSG #ops :hello d")
	expect(t, dave, "PRIVMSG", "hello d")

	wrong := filepath.Join(t.TempDir(), "secret")
	if err := foreign.Save(wrong); err != nil {
		t.Fatal(err)
	}
	cfg := LoopbackConfig(t.TempDir())
	cfg.MaxConnsPerIP, cfg.NoFloodLimits = DefaultConfig().MaxConnsPerIP, false
	join("node-e.test", wrong)(&cfg)
	ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Second)
	defer cancel()
	if e, err := Start(ctx, cfg, nil); err == nil {
		e.Close()
		t.Fatal("a node with another cluster's secret joined")
	}
	for _, m := range a.raft.Members() {
		if m.NodeID == "node-e.test" {
			t.Fatal("the node with the wrong secret is a member")
		}
	}
}

// readAll reads until the peer closes or the deadline passes.
func readAll(conn net.Conn) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(conn)
	return buf.Bytes(), err
}
