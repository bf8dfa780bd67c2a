package trust

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustGenerate(t testing.TB) *Secret {
	t.Helper()
	s, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustIdentity(t testing.TB, s *Secret, node string) *Identity {
	t.Helper()
	id, err := NewIdentity(s, node)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func chainOf(t testing.TB, id *Identity) [][]byte {
	t.Helper()
	c, err := id.certificate()
	if err != nil {
		t.Fatal(err)
	}
	return c.Certificate
}

func TestSecretRoundTripAndSave(t *testing.T) {
	s := mustGenerate(t)
	rotated, err := s.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster", "secret")
	if err := rotated.Save(path); err != nil {
		t.Fatal(err)
	}
	if err := rotated.Save(path); err == nil {
		t.Fatal("Save overwrote an existing file")
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode = %v, %v", info.Mode(), err)
	}
	if dir, _ := os.Stat(filepath.Dir(path)); dir.Mode().Perm() != 0o700 {
		t.Fatalf("secret dir mode = %v", dir.Mode())
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.CAs) != 2 || len(loaded.Cross) != 1 || len(loaded.GossipKeys) != 2 || loaded.CAs[1].Key == nil {
		t.Fatalf("loaded %d CAs, %d cross, %d keys", len(loaded.CAs), len(loaded.Cross), len(loaded.GossipKeys))
	}
	if !bytes.Equal(loaded.GossipKeys[0], rotated.GossipKeys[0]) || !loaded.CAs[0].Cert.Equal(rotated.CAs[0].Cert) {
		t.Fatal("loaded secret differs")
	}
	retired := loaded.Retire()
	if len(retired.CAs) != 1 || len(retired.Cross) != 0 || len(retired.GossipKeys) != 1 || !retired.CAs[0].Cert.Equal(rotated.CAs[0].Cert) {
		t.Fatal("retire kept more than the primary")
	}
	desc := loaded.Describe()
	key, _ := x509.MarshalPKCS8PrivateKey(loaded.CAs[0].Key)
	if !strings.Contains(desc, "ca primary sha256:") || !strings.Contains(desc, "cross sha256:") ||
		strings.Contains(desc, string(pem.EncodeToMemory(&pem.Block{Type: blockCAKey, Bytes: key}))) {
		t.Fatalf("describe = %q", desc)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("a world-readable secret loaded: %v", err)
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	s := mustGenerate(t)
	other := mustGenerate(t)
	good, _ := s.Marshal()
	block := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	caKey, _ := x509.MarshalPKCS8PrivateKey(s.CAs[0].Key)
	otherKey, _ := x509.MarshalPKCS8PrivateKey(other.CAs[0].Key)
	gossip := block(blockGossipKey, s.GossipKeys[0])
	ca := block(blockCA, s.CAs[0].Cert.Raw)
	rotated, _ := other.Rotate()
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"good", string(good), true},
		{"empty", "", false},
		{"garbage", "not pem", false},
		{"no CA", gossip, false},
		{"primary without key", ca + gossip, false},
		{"no gossip key", ca + block(blockCAKey, caKey), false},
		{"key of another CA", ca + block(blockCAKey, otherKey) + gossip, false},
		{"short gossip key", ca + block(blockCAKey, caKey) + block(blockGossipKey, []byte("short")), false},
		{"unknown block", ca + block(blockCAKey, caKey) + gossip + block("RSA PRIVATE KEY", []byte{1}), false},
		{"key before CA", block(blockCAKey, caKey) + ca + gossip, false},
		{"cross of another CA", ca + block(blockCAKey, caKey) + block(blockCross, rotated.Cross[0].Raw) + gossip, false},
		{"leaf as CA", block(blockCA, chainOf(t, mustIdentity(t, s, "n"))[0]) + gossip, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadSecret)) {
				t.Fatalf("Parse = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestVerifyAcrossRotation: nodes holding the old file, the rotated file and the retired file
// accept each other in the pairs a two-step rolling rotation puts side by side, and no one
// accepts a certificate of another cluster or a node named differently.
func TestVerifyAcrossRotation(t *testing.T) {
	old := mustGenerate(t)
	rotated, err := old.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	retired := rotated.Retire()
	foreign := mustGenerate(t)
	ids := map[string]*Identity{
		"old": mustIdentity(t, old, "a"), "rotated": mustIdentity(t, rotated, "b"),
		"retired": mustIdentity(t, retired, "c"), "foreign": mustIdentity(t, foreign, "x"),
	}
	tests := []struct {
		verifier, peer string
		ok             bool
	}{
		{"old", "old", true}, {"old", "rotated", true}, {"rotated", "old", true},
		{"rotated", "retired", true}, {"retired", "rotated", true}, {"retired", "retired", true},
		{"old", "foreign", false}, {"rotated", "foreign", false}, {"foreign", "old", false},
		{"retired", "old", false}, // after the retire step, the old CA is gone
	}
	for _, tt := range tests {
		t.Run(tt.verifier+"<-"+tt.peer, func(t *testing.T) {
			peer := ids[tt.peer]
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				node, err := ids[tt.verifier].Verify(chainOf(t, peer), usage)
				if (err == nil) != tt.ok {
					t.Fatalf("Verify = %q, %v; want ok=%v", node, err, tt.ok)
				}
				if err == nil && node != peer.NodeID() {
					t.Fatalf("Verify named %q, want %q", node, peer.NodeID())
				}
			}
		})
	}
}

// TestTLSHandshake runs real handshakes over a pipe: the server learns the client's node id from
// its certificate; a client expecting another node, or a client without a certificate, fails.
func TestTLSHandshake(t *testing.T) {
	s := mustGenerate(t)
	server, client := mustIdentity(t, s, "server-node"), mustIdentity(t, s, "client-node")
	tests := []struct {
		name   string
		config *tls.Config
		ok     bool
	}{
		{"cluster client", client.ClientConfig("palaver-rpc", "server-node"), true},
		{"any cluster node", client.ClientConfig("palaver-rpc", ""), true},
		{"expects another node", client.ClientConfig("palaver-rpc", "someone-else"), false},
		{"no client certificate", &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}, false},
		{"foreign client", mustIdentity(t, mustGenerate(t), "client-node").ClientConfig("palaver-rpc", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			deadline := time.Now().Add(10 * time.Second)
			a.SetDeadline(deadline)
			b.SetDeadline(deadline)
			srv := tls.Server(a, server.ServerConfig("palaver-rpc"))
			done := make(chan error, 1)
			go func() {
				err := srv.Handshake()
				if err != nil {
					a.Close()
				}
				done <- err
			}()
			cl := tls.Client(b, tt.config)
			clientErr := cl.Handshake()
			if clientErr != nil {
				b.Close()
			}
			serverErr := <-done
			if tt.ok {
				if clientErr != nil || serverErr != nil {
					t.Fatalf("handshake: client %v, server %v", clientErr, serverErr)
				}
				st := srv.ConnectionState()
				if node, err := PeerNode(&st); err != nil || node != "client-node" || st.NegotiatedProtocol != "palaver-rpc" {
					t.Fatalf("server sees %q (%v), proto %q", node, err, st.NegotiatedProtocol)
				}
				return
			}
			if clientErr == nil && serverErr == nil {
				t.Fatal("handshake succeeded")
			}
		})
	}
}

// TestCredentials: a node enrols once with the secret and keeps its key across restarts and a
// rotation; its credentials file holds no CA key, so its holder cannot issue a certificate for
// any node, and a certificate minted with the secret for a pinned node is refused.
func TestCredentials(t *testing.T) {
	s := mustGenerate(t)
	path := filepath.Join(t.TempDir(), "cluster", "node")
	c, changed, err := Enrol(s, "node-a", nil)
	if err != nil || !changed {
		t.Fatalf("Enrol = %v, changed %v", err, changed)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials mode = %v, %v", info, err)
	}
	loaded, err := LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.NodeID != "node-a" || !loaded.Key.Equal(c.Key) || !loaded.Cert.Equal(c.Cert) {
		t.Fatal("loaded credentials differ")
	}
	if again, changed, err := Enrol(s, "node-a", loaded); err != nil || changed || !again.Cert.Equal(c.Cert) {
		t.Fatalf("a second enrolment with the same secret changed the credentials: %v %v", changed, err)
	}
	if _, _, err := Enrol(s, "node-b", loaded); err == nil {
		t.Fatal("node-a's credentials enrolled as node-b")
	}
	rotated, err := s.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	after, changed, err := Enrol(rotated, "node-a", loaded)
	if err != nil || !changed || !after.Key.Equal(c.Key) || after.Cert.CheckSignatureFrom(rotated.CAs[0].Cert) != nil {
		t.Fatalf("rotation: %v, changed %v; the key must stay and the certificate come from the new CA", err, changed)
	}

	// What the file holds: no private key but the node's own.
	data, _ := os.ReadFile(path)
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if strings.Contains(block.Type, "KEY") && block.Type != blockNodeKey && block.Type != blockGossipKey {
			t.Fatalf("the credentials hold a %s", block.Type)
		}
	}
	if _, err := issue(loaded.Trust, "node-b", loaded.Key, time.Now()); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("the credentials issued a certificate: %v", err)
	}
	if _, err := Parse(data); err == nil {
		t.Fatal("credentials parse as a secret")
	}

	// Pins: the node's identity from the file; a certificate minted with the secret under its
	// name is accepted on its chain until the cluster pins node-a's key, refused after.
	id, err := loaded.Identity()
	if err != nil {
		t.Fatal(err)
	}
	verifier, minted := mustIdentity(t, s, "node-v"), mustIdentity(t, s, "node-a")
	if _, err := verifier.Verify(chainOf(t, minted), x509.ExtKeyUsageClientAuth); err != nil {
		t.Fatalf("before pinning: %v", err)
	}
	verifier.SetPins(func(node string) ([]byte, bool) {
		if node == "node-a" {
			return id.KeySum(), true
		}
		return nil, false
	})
	if _, err := verifier.Verify(chainOf(t, minted), x509.ExtKeyUsageClientAuth); !errors.Is(err, ErrNotClusterPeer) {
		t.Fatalf("a minted certificate of a pinned node was accepted: %v", err)
	}
	if node, err := verifier.Verify(chainOf(t, id), x509.ExtKeyUsageClientAuth); err != nil || node != "node-a" {
		t.Fatalf("the pinned node itself: %q %v", node, err)
	}
	if node, err := verifier.Verify(chainOf(t, mustIdentity(t, s, "node-new")), x509.ExtKeyUsageClientAuth); err != nil || node != "node-new" {
		t.Fatalf("an unpinned node: %q %v", node, err)
	}
}

func TestParseCredentialsRefusesBadFiles(t *testing.T) {
	s := mustGenerate(t)
	c, _, _ := Enrol(s, "n", nil)
	other, _, _ := Enrol(s, "m", nil)
	good, _ := c.Marshal()
	block := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	key, _ := x509.MarshalPKCS8PrivateKey(c.Key)
	caKey, _ := x509.MarshalPKCS8PrivateKey(s.CAs[0].Key)
	public, _ := s.Public().Marshal()
	tests := []struct {
		name, data string
		ok         bool
	}{
		{"good", string(good), true},
		{"empty", "", false},
		{"secret", string(mustMarshal(t, s)), false},
		{"certificate of another key", block(blockNodeKey, key) + block(blockNodeCert, other.Cert.Raw) + string(public), false},
		{"with a CA key", block(blockNodeKey, key) + block(blockNodeCert, c.Cert.Raw) + block(blockCA, s.CAs[0].Cert.Raw) + block(blockCAKey, caKey) + block(blockGossipKey, s.GossipKeys[0]), false},
		{"no gossip key", block(blockNodeKey, key) + block(blockNodeCert, c.Cert.Raw) + block(blockCA, s.CAs[0].Cert.Raw), false},
		{"certificate first", block(blockNodeCert, c.Cert.Raw) + block(blockNodeKey, key) + string(public), false},
		{"CA as node certificate", block(blockNodeKey, key) + block(blockNodeCert, s.CAs[0].Cert.Raw) + string(public), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCredentials([]byte(tt.data))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadSecret)) {
				t.Fatalf("ParseCredentials = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	// Credentials whose certificate another cluster's CA signed make no identity.
	foreign := mustGenerate(t)
	c.Trust = foreign.Public()
	if _, err := c.Identity(); err == nil {
		t.Fatal("credentials with another cluster's trust made an identity")
	}
}

func mustMarshal(t testing.TB, s *Secret) []byte {
	t.Helper()
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func FuzzParseCredentials(f *testing.F) {
	c, _, err := Enrol(mustGenerate(f), "n", nil)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := c.Marshal()
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		parsed, err := ParseCredentials(data)
		if err != nil {
			return
		}
		again, err := parsed.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseCredentials(again); err != nil {
			t.Fatalf("parsed credentials do not parse again: %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	s := mustGenerate(f)
	good, _ := s.Marshal()
	f.Add(good)
	f.Add([]byte("-----BEGIN PALAVER GOSSIP KEY-----\nAAAA\n-----END PALAVER GOSSIP KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parsed, err := Parse(data)
		if err != nil {
			return
		}
		again, err := parsed.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(again); err != nil {
			t.Fatalf("a parsed secret does not parse again: %v", err)
		}
	})
}

// TestOperatorProof: the secret's CA keys sign the session material and a node verifies it
// against the CA certificates it trusts; a node's credentials (no CA key), another cluster's
// secret, other material or too many signatures do not pass; across a rotation, the rotated file
// reaches a node still on the old trust.
func TestOperatorProof(t *testing.T) {
	s := mustGenerate(t)
	rotated, err := s.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	node := mustIdentity(t, s, "n")
	material := []byte("exported keying material of one session")
	sign := func(sec *Secret, m []byte) [][]byte {
		t.Helper()
		sigs, err := sec.SignOperator(m)
		if err != nil {
			t.Fatal(err)
		}
		return sigs
	}
	creds, _, _ := Enrol(s, "m", nil)
	many := sign(s, material)
	for range MaxOperatorProofs {
		many = append(many, many[0])
	}
	tests := []struct {
		name string
		sigs [][]byte
		ok   bool
	}{
		{"the secret", sign(s, material), true},
		{"the rotated secret, old trust", sign(rotated, material), true},
		{"a node's credentials", sign(creds.Trust, material), false},
		{"another cluster's secret", sign(mustGenerate(t), material), false},
		{"another session", sign(s, []byte("other material")), false},
		{"too many signatures", many, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := node.VerifyOperator(material, tt.sigs); got != tt.ok {
				t.Fatalf("VerifyOperator = %v, want %v", got, tt.ok)
			}
		})
	}
	if got, err := s.VerifyNode(chainOf(t, node)); err != nil || got != "n" {
		t.Fatalf("VerifyNode of the cluster's node = %q, %v", got, err)
	}
	if _, err := mustGenerate(t).VerifyNode(chainOf(t, node)); err == nil {
		t.Fatal("another cluster's secret verified the node")
	}
}
