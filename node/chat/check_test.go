package chat

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// machine builds a replica by applying commands, as Raft would.
type machine struct {
	t     *testing.T
	m     *fsm.Machine
	index uint64
}

func newMachine(t *testing.T) *machine {
	return &machine{t: t, m: fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

func (m *machine) apply(cmds ...fsm.Command) {
	m.t.Helper()
	for _, cmd := range cmds {
		m.index++
		data, err := fsm.Encode(cmd, fmt.Sprintf("rid-%d", m.index), "n1", 1_700_000_000_000+int64(m.index))
		if err != nil {
			m.t.Fatal(err)
		}
		if res := m.m.Apply(m.index, data).(fsm.Result); res.Code != fsm.OK && res.Code != fsm.NoChange {
			m.t.Fatalf("%T: %s", cmd, res.Code)
		}
	}
}

func TestCheck(t *testing.T) {
	m := newMachine(t)
	session := func(id, nick, did string) fsm.Command {
		return fsm.RegisterSession{ID: id, Node: "n1", Incarnation: "i", Nick: nick, User: "u", Host: "h", DID: did}
	}
	m.apply(session("op", "op", "did:plc:op"), session("member", "member", "did:plc:member"),
		session("voiced", "voiced", ""), session("outsider", "outsider", ""), session("banned", "banned", ""),
		fsm.Join{Session: "op", Channel: "#open"}, fsm.Join{Session: "member", Channel: "#open"},
		fsm.Join{Session: "op", Channel: "#n"}, fsm.Join{Session: "op", Channel: "#m"},
		fsm.Join{Session: "member", Channel: "#m"}, fsm.Join{Session: "voiced", Channel: "#m"},
		fsm.Join{Session: "op", Channel: "#e"}, fsm.Join{Session: "member", Channel: "#e"},
		fsm.Join{Session: "op", Channel: "#c"}, fsm.Join{Session: "member", Channel: "#c"},
		fsm.Join{Session: "banned", Channel: "#open"},
		fsm.Mode{Session: "op", Channel: "#n", Changes: []fsm.ModeChange{{Add: true, Mode: "n"}}},
		fsm.Mode{Session: "op", Channel: "#open", Changes: []fsm.ModeChange{{Add: false, Mode: "n"}, {Add: true, Mode: "b", Arg: "banned!*@*"}}},
		fsm.Mode{Session: "op", Channel: "#m", Changes: []fsm.ModeChange{{Add: true, Mode: "m"}, {Add: true, Mode: "v", Target: "voiced"}}},
		fsm.Mode{Session: "op", Channel: "#e", Changes: []fsm.ModeChange{{Add: true, Mode: "E"}}},
		fsm.Mode{Session: "op", Channel: "#c", Changes: []fsm.ModeChange{{Add: true, Mode: "C"}}},
	)
	react := map[string]string{"+react": "👍", "+reply": "01HXZ3K9Q8W2ABCDEFGHJKMNPQ"}
	edit := map[string]string{"+draft/edit": "01HXZ3K9Q8W2ABCDEFGHJKMNPQ"}
	for _, tc := range []struct {
		name    string
		r       Request
		numeric string
		code    string
	}{
		{"member sends", Request{Session: "member", Channel: "#open", Command: "PRIVMSG", Text: "hi"}, "", ""},
		{"flood budget spent", Request{Session: "member", Channel: "#open", Command: "PRIVMSG", Text: "hi", RateLimited: true}, "", "RATE_LIMITED"},
		{"no such channel", Request{Session: "member", Channel: "#none", Command: "PRIVMSG", Text: "hi"}, "403", ""},
		{"+n outsider", Request{Session: "outsider", Channel: "#n", Command: "PRIVMSG", Text: "hi"}, "404", ""},
		{"+n outsider who is oper", Request{Session: "outsider", Oper: true, Channel: "#n", Command: "PRIVMSG", Text: "hi"}, "", ""},
		{"-n outsider", Request{Session: "outsider", Channel: "#open", Command: "PRIVMSG", Text: "hi"}, "", ""},
		{"+m unvoiced", Request{Session: "member", Channel: "#m", Command: "PRIVMSG", Text: "hi"}, "404", ""},
		{"+m voiced", Request{Session: "voiced", Channel: "#m", Command: "PRIVMSG", Text: "hi"}, "", ""},
		{"banned", Request{Session: "banned", Channel: "#open", Command: "PRIVMSG", Text: "hi"}, "404", ""},
		{"+E plain text", Request{Session: "member", Channel: "#e", Command: "PRIVMSG", Text: "hi"}, "404", ""},
		{"+E encrypted", Request{Session: "member", Channel: "#e", Command: "PRIVMSG", Text: "ENC:abc"}, "", ""},
		{"+E TAGMSG", Request{Session: "member", Channel: "#e", Command: "TAGMSG"}, "", ""},
		{"+C CTCP", Request{Session: "member", Channel: "#c", Command: "PRIVMSG", Text: "\x01VERSION\x01"}, "404", ""},
		{"+C ACTION", Request{Session: "member", Channel: "#c", Command: "PRIVMSG", Text: "\x01ACTION waves\x01"}, "", ""},
		{"reaction from outsider", Request{Session: "outsider", Channel: "#open", Command: "TAGMSG", Tags: react}, "442", ""},
		{"unsigned reaction by DID", Request{Session: "member", DID: "did:plc:member", Channel: "#open", Command: "TAGMSG", Tags: react}, "", "SIGNATURE_REQUIRED"},
		{"signed reaction by DID", Request{Session: "member", DID: "did:plc:member", Channel: "#open", Command: "TAGMSG", Tags: react, OwnSignature: true}, "", ""},
		{"unsigned edit by DID", Request{Session: "member", DID: "did:plc:member", Channel: "#open", Command: "PRIVMSG", Text: "x", Tags: edit}, "", "SIGNATURE_REQUIRED"},
		{"guest edit", Request{Session: "outsider", Channel: "#open", Command: "PRIVMSG", Text: "x", Tags: edit}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(m.m, tc.r)
			if v.Numeric != tc.numeric || v.Code != tc.code || v.Allowed() != (tc.numeric == "" && tc.code == "") {
				t.Errorf("verdict %+v, want numeric %q code %q", v, tc.numeric, tc.code)
			}
			if !v.Allowed() && v.Text == "" {
				t.Error("a refusal without a text")
			}
		})
	}
}
