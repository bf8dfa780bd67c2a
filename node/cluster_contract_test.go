package node

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/node/signing"
)

// contractCheck is one contract check written against a deployment of one or more nodes: it
// must hold the same way on a single node and on a cluster.
type contractCheck struct {
	name string
	run  func(t *testing.T, nodes []*Node)
}

// contractChecks are run by TestContractOnOneNode and TestContractOnThreeNodes.
var contractChecks = []contractCheck{
	{"every node's server key is listed under the deployment DID on every node", checkDeploymentKeys},
	{"a message signed by any node verifies as server-key on every node", checkVerifyKeySource},
	{"evidence carries the canonical bytes signed", checkEvidenceCanonical},
	{"IRC messages cross nodes and every node lists the channel once", checkIRCAcrossNodes},
	{"a multiline message crosses nodes as one", checkMultilineAcrossNodes},
}

func TestContractOnOneNode(t *testing.T) {
	nodes := []*Node{startNode(t, t.TempDir(), nil)}
	for _, c := range contractChecks {
		t.Run(c.name, func(t *testing.T) { c.run(t, nodes) })
	}
}

func TestContractOnThreeNodes(t *testing.T) {
	nodes := startCluster(t)
	for _, c := range contractChecks {
		t.Run(c.name, func(t *testing.T) { c.run(t, nodes) })
	}
}

// getJSON reads a JSON answer into out and returns the status.
func getJSON(t *testing.T, n *Node, path string, out any) int {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+path, "", nil)
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.StatusCode
}

type keyList struct {
	Keys []struct {
		DID          string `json:"did"`
		KID          string `json:"kid"`
		RegisteredAt *int64 `json:"registered_at"`
		LastSeenAt   int64  `json:"last_seen_at"`
	} `json:"keys"`
}

func checkDeploymentKeys(t *testing.T, nodes []*Node) {
	did := "did:web:" + nodes[0].cfg.ServerName
	var kids []string
	for _, n := range nodes {
		kids = append(kids, signing.KID(n.serverKey.Public().(ed25519.PublicKey)))
	}
	var pairs []string
	for _, kid := range kids {
		pairs = append(pairs, did+"/"+kid)
	}
	for _, n := range nodes {
		eventually(t, "every server key listed on "+n.cfg.NodeName, func() bool {
			var list keyList
			if getJSON(t, n, "/api/v1/signing-keys/"+did, &list) != http.StatusOK {
				return false
			}
			listed := map[string]bool{}
			for _, k := range list.Keys {
				listed[k.KID] = k.RegisteredAt != nil && k.LastSeenAt != 0
			}
			for _, kid := range kids {
				if !listed[kid] {
					return false
				}
			}
			return len(list.Keys) == len(kids)
		})
		var batch keyList
		if code := getJSON(t, n, "/api/v1/signing-keys?keys="+url.QueryEscape(strings.Join(pairs, ",")), &batch); code != http.StatusOK || len(batch.Keys) != len(kids) {
			t.Fatalf("batch on %s = %d %+v", n.cfg.NodeName, code, batch)
		}
		for i, k := range batch.Keys {
			if k.KID != kids[i] || k.DID != did || k.RegisteredAt == nil {
				t.Fatalf("batch on %s: key %d = %+v, want %s", n.cfg.NodeName, i, k, kids[i])
			}
		}
		for _, kid := range kids {
			var one struct {
				KID          string `json:"kid"`
				RegisteredAt *int64 `json:"registered_at"`
			}
			if code := getJSON(t, n, "/api/v1/signing-keys/"+did+"/"+kid, &one); code != http.StatusOK || one.KID != kid || one.RegisteredAt == nil {
				t.Fatalf("key %s on %s = %d %+v", kid, n.cfg.NodeName, code, one)
			}
		}
	}
}

// sendSigned has a DID user on every node (nick prefix+a, +b, ...) say something in channel (the
// node signs it) and returns the msgids, one per node.
func sendSigned(t *testing.T, nodes []*Node, channel, prefix string) []string {
	var ids []string
	for i, n := range nodes {
		nick := prefix + string(rune('a'+i))
		c, _ := login(t, n, nick, "message-tags", "echo-message")
		c.Send("JOIN " + channel)
		expect(t, c, "366", channel)
		c.Send("PRIVMSG " + channel + " :signed on " + n.cfg.NodeName)
		m := expectFrom(t, c, nick, "PRIVMSG", "signed on "+n.cfg.NodeName)
		if m.Tags["+freeq.at/sig"] == "" {
			t.Fatalf("the message from %s is unsigned: %s", n.cfg.NodeName, m.String())
		}
		ids = append(ids, m.Tags["msgid"])
	}
	return ids
}

func checkVerifyKeySource(t *testing.T, nodes []*Node) {
	ids := sendSigned(t, nodes, "#contract-verify", "verifier")
	did := "did:web:" + nodes[0].cfg.ServerName
	for _, n := range nodes {
		for _, id := range ids {
			var v struct {
				Verdict    string `json:"verdict"`
				VerifiedBy string `json:"verified_by"`
				KeySource  string `json:"key_source"`
				SigningKey struct {
					DID string `json:"did"`
				} `json:"signing_key"`
			}
			eventually(t, "message "+id+" stored on "+n.cfg.NodeName, func() bool {
				return getJSON(t, n, "/api/v1/verify/"+id, &v) == http.StatusOK
			})
			if v.Verdict != "valid" || v.VerifiedBy != "server-key" || v.KeySource != "server-key" || v.SigningKey.DID != did {
				t.Fatalf("verify %s on %s = %+v", id, n.cfg.NodeName, v)
			}
		}
	}
}

func checkEvidenceCanonical(t *testing.T, nodes []*Node) {
	ids := sendSigned(t, nodes, "#contract-evidence", "witness")
	for _, n := range nodes {
		var data []byte
		eventually(t, "every message in the evidence on "+n.cfg.NodeName, func() bool {
			resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/contract-evidence/evidence", "", nil)
			data = body
			for _, id := range ids {
				if !strings.Contains(string(body), id) {
					return false
				}
			}
			return resp.StatusCode == http.StatusOK
		})
		if _, err := signing.VerifyBundle(data); err != nil {
			t.Fatalf("evidence from %s does not verify: %v", n.cfg.NodeName, err)
		}
		var b struct {
			Messages []struct {
				MsgID         string `json:"msgid"`
				CanonicalForm string `json:"canonical_form"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Messages {
			if !strings.Contains(m.CanonicalForm, `"msgid":"`+m.MsgID+`"`) {
				t.Fatalf("message %s in the evidence from %s: canonical_form %q", m.MsgID, n.cfg.NodeName, m.CanonicalForm)
			}
		}
	}
}

func checkIRCAcrossNodes(t *testing.T, nodes []*Node) {
	first, last := nodes[0], nodes[len(nodes)-1]
	x, _ := guest(t, first, "crossx")
	y, _ := guest(t, last, "crossy")
	x.Send("JOIN #contract-irc")
	expect(t, x, "366", "#contract-irc")
	y.Send("JOIN #contract-irc")
	expect(t, y, "353", "crossx", "crossy")
	expect(t, x, "JOIN", "#contract-irc")
	x.Send("PRIVMSG #contract-irc :across")
	expect(t, y, "PRIVMSG", "across")
	for _, n := range nodes {
		var list []struct {
			Name string `json:"name"`
		}
		eventually(t, "the channel listed on "+n.cfg.NodeName, func() bool {
			list = nil
			if getJSON(t, n, "/api/v1/channels", &list) != http.StatusOK {
				return false
			}
			seen := 0
			for _, c := range list {
				if c.Name == "#contract-irc" {
					seen++
				}
			}
			return seen == 1
		})
	}
	y.Send("LIST #contract-irc")
	expect(t, y, "322", "#contract-irc", "2")
	expect(t, y, "323")
}

func checkMultilineAcrossNodes(t *testing.T, nodes []*Node) {
	first, last := nodes[0], nodes[len(nodes)-1]
	caps := []string{"draft/multiline", "batch", "message-tags"}
	x, _ := guest(t, first, "mlcrossx", caps...)
	y, _ := guest(t, last, "mlcrossy", caps...)
	joinChannels(t, x, "#contract-ml")
	joinChannels(t, y, "#contract-ml")
	sendLines(t, x, "BATCH +m draft/multiline #contract-ml", "@batch=m PRIVMSG #contract-ml :first line",
		"@batch=m PRIVMSG #contract-ml :second line", "BATCH -m")
	start, body := batchBody(t, y, "draft/multiline")
	if got := strings.Join(texts(body), "\n"); got != "first line\nsecond line" || start.Tags["msgid"] == "" {
		t.Fatalf("multiline on %s: %q %q", last.cfg.NodeName, start.String(), got)
	}
	for _, n := range nodes {
		eventually(t, "one stored message on "+n.cfg.NodeName, func() bool {
			m, err := n.events.Get(testCtx(t), start.Tags["msgid"])
			return err == nil && m.Text == "first line\nsecond line"
		})
	}
}
