package av

import (
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestEncodingGolden pins the log encoding of every command type of the module.
func TestEncodingGolden(t *testing.T) {
	samples := []fsm.Command{
		AVStart{CallID: "c1", Channel: "#c", Node: "n1", DID: "did:plc:alice"},
		AVJoin{CallID: "c1", DID: "did:plc:alice"},
		AVLeave{CallID: "c1", DID: "did:plc:alice", Reason: "bye"},
		AVEnd{CallID: "c1", By: "did:plc:alice", Reason: "done"},
		AVEndNode{Node: "n1", Reason: "gone"},
		AVAddArtifact{CallID: "c1", ArtifactID: "01HXART", DID: "did:plc:alice", Kind: "recording",
			URL: "https://example.com/r.webm", Title: "Weekly call"},
		AVOperatorEnd{CallID: "c1", DID: "did:plc:alice", Session: "s1", ServerOper: true, Reason: "done"},
	}
	env := fsmtest.GoldenEnv
	fsmtest.CheckGolden(t, samples, []string{
		"\x32\x00" + env + `{"call_id":"c1","channel":"#c","node":"n1","did":"did:plc:alice"}}`,
		"\x33\x00" + env + `{"call_id":"c1","did":"did:plc:alice"}}`,
		"\x34\x00" + env + `{"call_id":"c1","did":"did:plc:alice","reason":"bye"}}`,
		"\x35\x00" + env + `{"call_id":"c1","by":"did:plc:alice","reason":"done"}}`,
		"\x36\x00" + env + `{"node":"n1","reason":"gone"}}`,
		"\x37\x00" + env + `{"call_id":"c1","artifact_id":"01HXART","did":"did:plc:alice","kind":"recording","url":"https://example.com/r.webm","title":"Weekly call"}}`,
		"\x38\x00" + env + `{"call_id":"c1","did":"did:plc:alice","session":"s1","server_oper":true,"reason":"done"}}`,
	})
	seen := map[fsm.CommandType]bool{}
	for _, cmd := range samples {
		seen[cmd.CommandType()] = true
		if l := fsm.CommandLevel(cmd); l != 0 {
			t.Errorf("%T: level %d, want 0", cmd, l)
		}
	}
	for typ := range module().Commands {
		if !seen[typ] {
			t.Errorf("command type %d has no sample", typ)
		}
	}
}

// TestDeterminism applies seeded random logs of call and core commands to machines that must
// agree, one restored from a snapshot halfway.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		for c := range fsmtest.CheckDeterminism(t, fsmtest.RandomLog(seed, 3000, randomAVCommand), nil) {
			codes[c] = true
		}
	}
	for _, c := range []fsm.Code{fsm.OK, ErrAVNoCall, ErrAVNeedsAccount} {
		if !codes[c] {
			t.Errorf("no log answered %s", c)
		}
	}
}
