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

func TestCertificateRenewal(t *testing.T) {
	id := mustIdentity(t, mustGenerate(t), "n")
	first, _ := id.certificate()
	if again, _ := id.certificate(); again != first {
		t.Fatal("a fresh certificate was reissued")
	}
	id.now = func() time.Time { return time.Now().Add(nodeCertLifetime - nodeCertRenew + time.Minute) }
	renewed, err := id.certificate()
	if err != nil || renewed == first || !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Fatalf("certificate near its end was not renewed: %v", err)
	}
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
