package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/rest/contracttest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// botCertificate is a FreeqBotDelegation/v1 certificate for bot, signed by its owner, as
// freeq's bot kit presents it (base64url JSON).
func botCertificate(t *testing.T, bot string, owner ed25519.PrivateKey, ownerDID string) string {
	t.Helper()
	cert := map[string]any{"type": coord.DelegationType, "bot_did": bot, "bot_public_key": strings.TrimPrefix(bot, "did:key:"),
		"creator_did": ownerDID, "created_at": "2026-01-01T00:00:00Z", "revocation_authority": ownerDID}
	msg, err := json.Marshal(cert) // sorted keys, ASCII values: its JCS form
	if err != nil {
		t.Fatal(err)
	}
	cert["signature"] = base64.RawURLEncoding.EncodeToString(ed25519.Sign(owner, msg))
	body, err := json.Marshal(cert)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(body)
}

func didKeyOf(t *testing.T, pub ed25519.PublicKey) string {
	t.Helper()
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: pub})
	if err != nil {
		t.Fatal(err)
	}
	return "did:key:" + mb
}

// actLine is a signed act TAGMSG to channel from did.
func actLine(t *testing.T, priv ed25519.PrivateKey, did, channel string, kv ...string) (line, eventID string) {
	t.Helper()
	eventID = ulid.Make().String()
	tags := map[string]string{"+freeq.at/from": did}
	for i := 0; i+1 < len(kv); i += 2 {
		tags["+freeq.at/"+kv[i]] = kv[i+1]
	}
	venue, _ := signing.ChannelVenue(channel)
	canonical, err := signing.Act{ID: eventID, Venue: venue, Tags: tags}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	tags["+freeq.at/eventid"] = eventID
	tags["+freeq.at/sig"] = signing.Sign(priv, canonical)
	m := ircmsg.Message{Tags: tags, Command: "TAGMSG", Params: []string{channel}}
	return m.String(), eventID
}

// actorOf reads /api/v1/actors/{did} on n.
func actorOf(t *testing.T, n *Node, did string) map[string]any {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/actors/"+url.PathEscape(did), "", nil)
	if resp.StatusCode != 200 {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCoordBotKitOnEveryNode speaks what freeq's bot kit sends after 001 on node a, reads the
// actor record through REST on node c, and runs an act event through the cluster: checked before
// it is relayed, filed once, confirmed by the server, readable on every node.
func TestCoordBotKitOnEveryNode(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	_, ownerPriv, _ := ed25519.GenerateKey(rand.Reader)
	ownerDID := didKeyOf(t, ownerPriv.Public().(ed25519.PublicKey))
	_, botPriv, _ := ed25519.GenerateKey(rand.Reader)
	bot, res := loginAs(t, a, ircclient.NewEd25519Signer(botPriv), "scholar", "message-tags", "echo-message")
	botDID := res.DID

	sendLines(t, bot,
		"PROVENANCE :"+botCertificate(t, botDID, ownerPriv, ownerDID),
		"AGENT REGISTER :class=agent",
		"PRESENCE :state=active",
		"HEARTBEAT :state=active;ttl=60",
	)
	expect(t, bot, "NOTICE", "Provenance verified")
	syncClient(t, bot)
	refuteMsg(t, bot.Seen(), "FAIL")

	var actor map[string]any
	eventually(t, "the actor record on node c", func() bool {
		actor = actorOf(t, c, botDID)
		hb, _ := actor["heartbeat"].(map[string]any)
		return actor != nil && actor["actor_class"] == "agent" && hb != nil
	})
	prov, _ := actor["provenance"].(map[string]any)
	pres, _ := actor["presence"].(map[string]any)
	hb, _ := actor["heartbeat"].(map[string]any)
	if prov["verified"] != true || prov["principal"] != ownerDID || pres["state"] != "active" || hb["healthy"] != true ||
		hb["ttl_seconds"] != float64(60) || actor["online"] != true {
		t.Fatalf("actor on node c: %+v", actor)
	}

	// The agent's JOIN carries its actor class to a member on another node, and it is a bot there.
	watcher, _ := login(t, b, "watcher", "message-tags")
	eventually(t, "the bot mode on node b", func() bool {
		watcher.Send("WHOIS scholar")
		msgs := readUntil(t, watcher, "end of WHOIS", func(m ircmsg.Message) bool { return m.Command == "318" })
		_, bot := findMsg(msgs, "335", "scholar")
		return bot
	})
	joinChannels(t, watcher, "#agents")
	bot.Send("JOIN #agents")
	join, err := watcher.Expect(testCtx(t), func(m ircmsg.Message) bool { return m.Command == "JOIN" && isFrom(m, "scholar") })
	if err != nil || join.Tags["+freeq.at/actor-class"] != "agent" {
		t.Fatalf("JOIN on node b: %+v, %v", join, err)
	}

	// An act offer: relayed, filed once, confirmed by the server, readable on node c.
	line, offerID := actLine(t, botPriv, botDID, "#agents", "act", "handoff", "act-verb", "offer", "act-title", "Cite 3 sources")
	bot.Send(line)
	expect(t, watcher, "TAGMSG", "#agents")
	receipt, err := watcher.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Tags["+freeq.at/act-verb"] == "confirm" && m.Tags["+freeq.at/act-subject"] == offerID
	})
	if err != nil || receipt.Tags["+freeq.at/sig"] == "" {
		t.Fatalf("receipt: %+v, %v", receipt, err)
	}
	var filed []byte
	eventually(t, "the action on node c", func() bool {
		resp, body := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/actions/"+offerID, "", nil)
		filed = body
		return resp.StatusCode == 200 && strings.Contains(string(body), `"confirm_state":"confirmed"`) && strings.Contains(string(body), `"state":"open"`)
	})
	// One receipt: the one filed in the state and served over REST is the one the channel got.
	var action struct {
		Events []struct {
			Receipt *struct {
				EventID   string `json:"event_id"`
				Signature string `json:"signature"`
			} `json:"receipt"`
		} `json:"events"`
	}
	if err := json.Unmarshal(filed, &action); err != nil || len(action.Events) == 0 || action.Events[0].Receipt == nil {
		t.Fatalf("action %s: %v", filed, err)
	}
	if r := action.Events[0].Receipt; r.EventID != receipt.Tags["msgid"] || r.Signature != receipt.Tags["+freeq.at/sig"] {
		t.Fatalf("filed receipt %s %s, sent %s %s", r.EventID, r.Signature, receipt.Tags["msgid"], receipt.Tags["+freeq.at/sig"])
	}

	// A forged act is refused before it is relayed; a step out of order too.
	forged, _ := actLine(t, botPriv, botDID, "#agents", "act", "handoff", "act-verb", "claim", "act-id", offerID)
	forged = strings.Replace(forged, "act-verb=claim", "act-verb=cancel", 1)
	bot.Send(forged)
	expect(t, bot, "FAIL", "TAGMSG", "SIGNATURE_INVALID")
	early, _ := actLine(t, botPriv, botDID, "#agents", "act", "handoff", "act-verb", "complete", "act-id", offerID)
	bot.Send(early)
	expect(t, bot, "FAIL", "TAGMSG", "ILLEGAL_STEP")

	// A typed event, as freeq's example agent sends it, read back from the timeline on node c.
	bot.Send(`@+freeq.at/event=task_request;+freeq.at/task-id=t-1;+freeq.at/payload={"description":"summarize"} TAGMSG #agents`)
	eventually(t, "the task on node c", func() bool {
		resp, body := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels/agents/events?type=task_request", "", nil)
		return resp.StatusCode == 200 && strings.Contains(string(body), `"ref_id":"t-1"`)
	})

	// Every coordination route answers per the contract on every node, with the Error object on
	// every 4xx.
	for _, n := range nodes {
		eventually(t, "the action and the task on "+n.cfg.NodeName, func() bool {
			resp, _ := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/actions/"+offerID, "", nil)
			task, _ := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/tasks/t-1", "", nil)
			return resp.StatusCode == 200 && task.StatusCode == 200
		})
		contract := contracttest.Fetch(t, "http://"+n.HTTPAddr())
		for path, want := range map[string]int{
			"/api/v1/actions": 200, "/api/v1/actions/" + offerID: 200, "/api/v1/actions/01M16E7TC0NOSUCH0000000000": 404,
			"/api/v1/actions?limit=abc": 400, "/api/v1/tasks/none": 404, "/api/v1/tasks/t-1": 200, "/api/v1/agents/manifests": 200,
			"/api/v1/agents/manifests/" + url.PathEscape(botDID): 404, "/api/v1/agents/spawned": 200,
			"/api/v1/channels/agents/agent-capabilities": 200, "/api/v1/channels/nochan/agent-capabilities": 404,
			"/api/v1/channels/agents/approvals": 200, "/api/v1/channels/agents/events?type=offer": 200,
			"/api/v1/channels/agents/audit": 200, "/api/v1/channels/agents/events?since=never": 400,
			"/api/v1/actors/" + url.PathEscape(botDID): 200,
		} {
			u := "http://" + n.HTTPAddr() + path
			resp, body := httpDo(t, "GET", u, "", nil)
			contract.Check(t, "GET", u, resp, body)
			var e struct {
				Error  string `json:"error"`
				Status int    `json:"status"`
			}
			if resp.StatusCode != want || want >= 400 && (json.Unmarshal(body, &e) != nil || e.Status != want || e.Error == "") {
				t.Errorf("%s on %s: %d %s, want %d", path, n.cfg.NodeName, resp.StatusCode, body, want)
			}
		}
	}

	// At stop the bot kit says it is offline.
	bot.Send("PRESENCE :state=offline")
	eventually(t, "offline on node c", func() bool {
		p, _ := actorOf(t, c, botDID)["presence"].(map[string]any)
		return p != nil && p["state"] == "offline"
	})
}
