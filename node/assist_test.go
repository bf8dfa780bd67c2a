package node

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// callTool POSTs a body (a string as is, anything else JSON-encoded) to a tool route and decodes
// the envelope; it fails the test on any status but 200 or a body that is not an envelope.
func callTool(t *testing.T, n *Node, path, token string, body any) (assist.Envelope, string) {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(data)
	}
	resp, data := httpDo(t, "POST", "http://"+n.HTTPAddr()+path, token, strings.NewReader(raw))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s %.200q: %d %s", path, raw, resp.StatusCode, data)
	}
	var env assist.Envelope
	if err := json.Unmarshal(data, &env); err != nil || env.RequestID == "" || env.Diagnosis.Code == "" {
		t.Fatalf("POST %s: not an envelope (%v): %s", path, err, data)
	}
	if !strings.HasPrefix(env.RequestID, "req_") || env.SafeFacts == nil || env.Redactions == nil || env.SuggestedFixes == nil || env.Followups == nil {
		t.Fatalf("POST %s: envelope fields missing: %s", path, data)
	}
	return env, string(data)
}

// assistWorld is a node with channels in every state the tools diagnose, made by real clients.
type assistWorld struct {
	n                    *Node
	alice, bob           *ircclient.Client
	aliceRes, bobRes     ircclient.SASLResult
	pub                  []string // msgids of #pub, oldest first
	secretID, secretText string
}

func newAssistWorld(t *testing.T, n *Node) *assistWorld {
	t.Helper()
	w := &assistWorld{n: n}
	w.alice, w.aliceRes = login(t, n, "alice", "echo-message", "message-tags")
	w.bob, w.bobRes = login(t, n, "bob", "echo-message", "message-tags")
	chanOp(t, w.alice, "#pub")
	chanOp(t, w.alice, "#secret", "+i")
	chanOp(t, w.alice, "#keyed", "+k sesame")
	chanOp(t, w.alice, "#full", "+l 1")
	chanOp(t, w.alice, "#mod", "+m")
	chanOp(t, w.alice, "#banned", "+b "+w.bobRes.DID)
	chanOp(t, w.alice, "#muted")
	joinChannels(t, w.bob, "#mod", "#muted")
	sendLines(t, w.alice, "MODE #muted +b m:"+w.bobRes.DID)
	expect(t, w.bob, "MODE", "#muted", "+b")
	for _, text := range []string{"one", "two", "three"} {
		w.pub = append(w.pub, sendAndID(t, w.alice, "#pub", text))
	}
	w.secretText = "the secret plan"
	w.secretID = sendAndID(t, w.alice, "#secret", w.secretText)
	return w
}

// sendAndID sends a PRIVMSG and returns the msgid of its echo.
func sendAndID(t *testing.T, c *ircclient.Client, target, text string) string {
	t.Helper()
	sendLines(t, c, "PRIVMSG "+target+" :"+text)
	m := expectParams(t, c, "PRIVMSG", target, text)
	if m.Tags["msgid"] == "" {
		t.Fatalf("echo without msgid: %v", m)
	}
	return m.Tags["msgid"]
}

func hasFact(env assist.Envelope, want string) bool {
	for _, f := range env.SafeFacts {
		if strings.Contains(f, want) {
			return true
		}
	}
	return false
}

// TestAssistToolsDiagnoseRealState runs each tool against state that real IRC clients made on one
// node, over HTTP.
func TestAssistToolsDiagnoseRealState(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	w := newAssistWorld(t, n)
	bob, alice := w.bobRes.Token, w.aliceRes.Token
	type check func(t *testing.T, env assist.Envelope, raw string)
	fact := func(want string) check {
		return func(t *testing.T, env assist.Envelope, _ string) {
			if !hasFact(env, want) {
				t.Errorf("no fact with %q in %v", want, env.SafeFacts)
			}
		}
	}
	summary := func(want string) check {
		return func(t *testing.T, env assist.Envelope, _ string) {
			if !strings.Contains(env.Diagnosis.Summary, want) {
				t.Errorf("summary %q lacks %q", env.Diagnosis.Summary, want)
			}
		}
	}
	absent := func(bad ...string) check {
		return func(t *testing.T, _ assist.Envelope, raw string) {
			for _, b := range bad {
				if strings.Contains(raw, b) {
					t.Errorf("answer leaks %q: %s", b, raw)
				}
			}
		}
	}
	redacted := func(t *testing.T, env assist.Envelope, _ string) {
		if len(env.Redactions) == 0 {
			t.Errorf("nothing named as redacted")
		}
	}
	cases := []struct {
		name, tool, token string
		body              any
		code              string
		checks            []check
	}{
		// diagnose_join_failure names the ban, +i, +k and +l that refuse this DID.
		{"join banned", "diagnose_join_failure", bob, map[string]any{"channel": "#banned"}, "JOIN_DENIED",
			[]check{summary("474"), summary(w.bobRes.DID), redacted}},
		{"join invite-only", "diagnose_join_failure", bob, map[string]any{"channel": "secret", "observed_numeric": "473"}, "JOIN_DENIED",
			[]check{summary("473"), summary("+i")}},
		{"join keyed", "diagnose_join_failure", bob, map[string]any{"channel": "#keyed", "key": "wrong"}, "JOIN_DENIED",
			[]check{summary("475"), absent("sesame"), redacted}},
		{"join keyed right key", "diagnose_join_failure", bob, map[string]any{"channel": "#keyed", "key": "sesame"}, "JOIN_SHOULD_SUCCEED", nil},
		{"join full", "diagnose_join_failure", bob, map[string]any{"channel": "#full"}, "JOIN_DENIED", []check{summary("471"), summary("limit +l 1")}},
		{"join open", "diagnose_join_failure", bob, map[string]any{"channel": "#pub", "observed_numeric": "474"}, "JOIN_SHOULD_SUCCEED",
			[]check{summary("no longer holds")}},
		{"join founder", "diagnose_join_failure", alice, map[string]any{"channel": "#banned"}, "JOIN_SHOULD_SUCCEED", nil},
		{"join unknown channel", "diagnose_join_failure", bob, map[string]any{"channel": "#nowhere"}, "CHANNEL_DOES_NOT_EXIST", nil},
		{"join other account", "diagnose_join_failure", bob, map[string]any{"channel": "#pub", "account": w.aliceRes.DID}, "JOIN_SELF_ONLY", []check{redacted}},
		{"join anonymous", "diagnose_join_failure", "", map[string]any{"channel": "#pub"}, "JOIN_SELF_ONLY", nil},

		// predict_message_outcome applies the message path's checks.
		{"predict moderated", "predict_message_outcome", bob, map[string]any{"target": "#mod", "text": "hi"}, "PREDICTED_REJECTED", []check{summary("+m")}},
		{"predict outside +n", "predict_message_outcome", bob, map[string]any{"target": "#pub", "text": "hi"}, "PREDICTED_REJECTED", []check{summary("+n")}},
		{"predict banned", "predict_message_outcome", bob, map[string]any{"target": "#banned"}, "PREDICTED_REJECTED", []check{summary("+n")}},
		{"predict op", "predict_message_outcome", alice, map[string]any{"target": "#mod", "text": "hi"}, "PREDICTED_ACCEPTED", []check{fact("Flood limits are off")}},
		{"predict muted", "predict_message_outcome", bob, map[string]any{"target": "#muted", "text": "hi"}, "PREDICTED_REJECTED", []check{summary("muted")}},
		{"predict too large", "predict_message_outcome", alice, map[string]any{"target": "#pub", "draft_size_bytes": 9000}, "PREDICTED_REJECTED", []check{summary("417")}},
		{"predict no channel", "predict_message_outcome", bob, map[string]any{"target": "#nowhere"}, "PREDICT_CHANNEL_DOES_NOT_EXIST", nil},
		{"predict nick", "predict_message_outcome", bob, map[string]any{"target": "alice"}, "PREDICTED_ACCEPTED", nil},
		{"predict no nick", "predict_message_outcome", bob, map[string]any{"target": "nobody"}, "PREDICTED_REJECTED", []check{summary("401")}},
		{"predict anonymous", "predict_message_outcome", "", map[string]any{"target": "#pub"}, "PREDICT_SELF_ONLY", nil},

		// replay_missed_messages returns exactly the readable messages after the anchor.
		{"replay", "replay_missed_messages", bob, map[string]any{"channel": "#pub", "since_msgid": w.pub[0]}, "GAP_REPORTED",
			[]check{summary("2 messages"), absent(w.pub[0] + `","timestamp`), func(t *testing.T, env assist.Envelope, _ string) {
				ev, _ := json.Marshal(env.Evidence)
				var got struct{ Messages []assist.Message }
				json.Unmarshal(ev, &got)
				if len(got.Messages) != 2 || got.Messages[0].MsgID != w.pub[1] || got.Messages[1].MsgID != w.pub[2] || got.Messages[1].Text != "three" {
					t.Errorf("replayed %+v, want %v", got.Messages, w.pub[1:])
				}
			}}},
		{"replay limit", "replay_missed_messages", "", map[string]any{"channel": "#pub", "since_msgid": w.pub[0], "limit": 1}, "GAP_REPORTED",
			[]check{summary("the first 1")}},
		{"replay restricted", "replay_missed_messages", bob, map[string]any{"channel": "#secret", "since_msgid": w.secretID}, "REPLAY_REQUIRES_MEMBERSHIP",
			[]check{absent(w.secretID, w.secretText), redacted}},
		{"replay foreign anchor", "replay_missed_messages", bob, map[string]any{"channel": "#pub", "since_msgid": w.secretID}, "ANCHOR_MSGID_NOT_FOUND",
			[]check{absent(w.secretText)}},
		{"replay member", "replay_missed_messages", alice, map[string]any{"channel": "#secret", "since_msgid": w.secretID}, "GAP_REPORTED", []check{summary("0 messages")}},

		// diagnose_message_ordering compares the order seen with the server's.
		{"ordering matches", "diagnose_message_ordering", "", map[string]any{"channel": "#pub", "message_ids": w.pub}, "ORDER_MATCHES_CANONICAL", nil},
		{"ordering mismatch", "diagnose_message_ordering", "", map[string]any{"channel": "#pub", "message_ids": []string{w.pub[2], w.pub[0], w.pub[1]}},
			"DISPLAY_ORDER_MISMATCH", []check{summary(w.pub[0] + ", " + w.pub[1] + ", " + w.pub[2])}},
		{"ordering foreign ids", "diagnose_message_ordering", bob, map[string]any{"channel": "#pub", "message_ids": []string{w.pub[0], w.secretID}},
			"ORDER_MATCHES_CANONICAL", []check{absent(w.secretID, w.secretText), redacted}},
		{"ordering restricted", "diagnose_message_ordering", bob, map[string]any{"channel": "#secret", "message_ids": []string{w.secretID}},
			"ORDERING_REQUIRES_MEMBERSHIP", []check{absent(w.secretText)}},

		// inspect_my_session reports the caller's own sessions.
		{"inspect", "inspect_my_session", bob, map[string]any{}, "SESSION_REPORTED", []check{fact("nick bob"), fact("#mod")}},
		{"inspect other", "inspect_my_session", bob, map[string]any{"account": w.aliceRes.DID}, "INSPECT_SELF_ONLY", []check{absent("alice")}},
		{"inspect anonymous", "inspect_my_session", "", map[string]any{}, "INSPECT_SELF_ONLY", nil},

		// explain_message_routing parses the line and names recipients by node.
		{"routing", "explain_message_routing", bob, map[string]any{"wire_line": ":alice!a@h PRIVMSG #mod :hi", "my_nick": "bob"}, "ROUTING_EXPLAINED",
			[]check{fact("node palaver.test: 2 recipients (alice, bob)"), fact("You (bob) are a member")}},
		{"routing status", "explain_message_routing", bob, map[string]any{"wire_line": "PRIVMSG @#mod :ops only"}, "ROUTING_EXPLAINED",
			[]check{fact("1 recipient (alice)"), fact("STATUSMSG")}},
		{"routing restricted", "explain_message_routing", bob, map[string]any{"wire_line": "@msgid=" + w.secretID + " PRIVMSG #secret :x"}, "ROUTING_EXPLAINED",
			[]check{absent(w.secretID, "alice"), redacted}},
		{"routing too large", "explain_message_routing", "", map[string]any{"wire_line": "PRIVMSG #pub :" + strings.Repeat("x", 9000)}, "WIRE_LINE_TOO_LARGE", nil},
		{"routing unparsable", "explain_message_routing", "", map[string]any{"wire_line": "@"}, "WIRE_LINE_PARSE_FAILED", nil},
		{"routing dm", "explain_message_routing", "", map[string]any{"wire_line": "PRIVMSG bob :hi"}, "ROUTING_EXPLAINED", []check{summary("1 session")}},

		// diagnose_sync reports the Raft indexes.
		{"sync", "diagnose_sync", bob, map[string]any{"channel": "#pub"}, "SYNC_STATE_REPORTED",
			[]check{fact("applied index"), fact("The newest message of #pub on this node is " + w.pub[2])}},
		{"sync restricted", "diagnose_sync", bob, map[string]any{"channel": "#secret"}, "SYNC_STATE_REPORTED", []check{absent(w.secretID), redacted}},

		// validate_client_config checks against the offered transports and capabilities.
		{"config warnings", "validate_client_config", "", map[string]any{"client_name": "tiny", "transport": "websocket", "auth_method": "crypto",
			"supports": map[string]bool{"message_tags": false, "sasl": true, "server_time": true}}, "CONFIG_HAS_WARNINGS", nil},
		{"config ok", "validate_client_config", "", map[string]any{"client_name": "full", "server_url": "ircs://palaver.test:6697", "auth_method": "crypto",
			"supports": map[string]bool{"message_tags": true, "sasl": true, "server_time": true, "batch": true, "echo_message": true}}, "CONFIG_OK", nil},

		// diagnose_disconnect without a record.
		{"disconnect none", "diagnose_disconnect", bob, map[string]any{}, "DISCONNECT_REPORTED", []check{fact("in memory")}},

		// diagnose_av_session: no SFU on this node.
		{"av", "diagnose_av_session", bob, map[string]any{"channel": "#pub"}, "NO_ACTIVE_AV_SESSION", []check{summary("AV is not running")}},
		{"av restricted", "diagnose_av_session", bob, map[string]any{"channel": "#secret"}, "AV_REQUIRES_MEMBERSHIP", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, raw := callTool(t, n, assist.ToolsPath+tc.tool, tc.token, tc.body)
			if env.Diagnosis.Code != tc.code {
				t.Fatalf("code %s, want %s: %s", env.Diagnosis.Code, tc.code, raw)
			}
			for _, c := range tc.checks {
				c(t, env, raw)
			}
		})
	}
}
