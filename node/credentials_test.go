package node

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/trust"
)

// waitPinned waits until every node's replica pins every node of the cluster to the key of its
// credentials.
func waitPinned(t *testing.T, nodes []*Node) {
	t.Helper()
	eventually(t, "every node's key pinned", func() bool {
		for _, n := range nodes {
			for _, m := range nodes {
				var sum []byte
				var ok bool
				n.machine.Read(func(st *fsm.State) { sum, ok = st.NodeKey(m.cfg.NodeName) })
				if !ok || !bytes.Equal(sum, credentialsOf(t, m).keySum(t)) {
					return false
				}
			}
		}
		return true
	})
}

type testCredentials struct{ *trust.Credentials }

func (c testCredentials) keySum(t *testing.T) []byte {
	t.Helper()
	id, err := c.Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.KeySum()
}

func credentialsOf(t *testing.T, n *Node) testCredentials {
	t.Helper()
	c, err := trust.LoadCredentials(filepath.Join(n.cfg.DataDir, credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	return testCredentials{c}
}

// TestNodeRunsOnItsCredentials: a node that joined with the secret keeps only its own key, its
// certificate and the secret's public part: its data directory holds no CA key, so whoever takes
// it cannot issue a certificate for another node; the node restarts without the secret and
// rejoins under the key the cluster pinned.
func TestNodeRunsOnItsCredentials(t *testing.T) {
	ircB, httpB, raftB, gossipB, clusterB := reactionAddrs(t)
	a := startNode(t, t.TempDir(), func(c *Config) {
		c.NodeName, c.GossipAddr, c.ClusterAddr = "node-a.test", "127.0.0.1:0", "127.0.0.1:0"
	})
	join := []string{a.GossipAddr()}
	// b listens at fixed addresses, so that it comes back where gossip knows it; it joins with the
	// secret the first time only.
	configB := func(secret string) func(*Config) {
		return func(c *Config) {
			c.NodeName, c.Join, c.ClusterSecret = "node-b.test", join, secret
			c.IRCAddr, c.HTTPAddr, c.RaftAddr, c.GossipAddr, c.ClusterAddr, c.TLSAddr = ircB, httpB, raftB, gossipB, clusterB, ""
		}
	}
	b := startNode(t, t.TempDir(), configB(secretOf(a)))
	c := startNode(t, t.TempDir(), func(c *Config) {
		c.NodeName, c.GossipAddr, c.ClusterAddr, c.Join, c.ClusterSecret = "node-c.test", "127.0.0.1:0", "127.0.0.1:0", join, secretOf(a)
	})
	nodes := []*Node{a, b, c}
	threeVoters := func() bool { return liveVoters(a) == 3 }
	eventually(t, "three voters", threeVoters)
	waitPinned(t, nodes)
	secret, err := trust.Load(secretOf(a))
	if err != nil {
		t.Fatal(err)
	}

	// Every private key in b's data directory, in any PEM file, is not a CA's.
	keys := 0
	err = filepath.WalkDir(b.cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for rest := data; ; {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				continue
			}
			keys++
			signer, ok := key.(crypto.Signer)
			if !ok {
				continue
			}
			for _, ca := range secret.CAs {
				if ca.Cert.PublicKey.(*ecdsa.PublicKey).Equal(signer.Public()) {
					t.Fatalf("%s holds the CA key", path)
				}
			}
		}
		return nil
	})
	if err != nil || keys == 0 {
		t.Fatalf("walked b's data directory: %v, %d private keys (its own at least)", err, keys)
	}
	stolen := credentialsOf(t, b)
	if _, _, err := trust.Enrol(stolen.Trust, c.cfg.NodeName, nil); err == nil {
		t.Fatal("b's credentials issued a certificate for node c")
	}

	// b restarts without the secret, under the same key.
	before := stolen.keySum(t)
	dir := b.cfg.DataDir
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startNode(t, dir, configB(""))
	nodes[1] = b
	if !bytes.Equal(credentialsOf(t, b).keySum(t), before) {
		t.Fatal("b's key changed across the restart")
	}
	eventually(t, "three voters again", threeVoters)
	waitPinned(t, nodes)
	chatAcross(t, b, c, "#creds", "back on my own key")

	// Another node's data directory is refused as b's.
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "cluster"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.cfg.DataDir, credentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, credentialsFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := LoopbackConfig(other)
	cfg.NodeName, cfg.GossipAddr, cfg.ClusterAddr, cfg.Join = "node-b.test", "127.0.0.1:0", "127.0.0.1:0", join
	if n, err := Start(testCtx(t), cfg, nil); err == nil || !strings.Contains(err.Error(), `names node "node-c.test"`) {
		if n != nil {
			n.Close()
		}
		t.Fatalf("node c's credentials started as node b: %v", err)
	}
}
