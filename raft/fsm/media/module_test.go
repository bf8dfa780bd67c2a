package media

import (
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestEncodingGolden pins the log encoding of every command type of the module.
func TestEncodingGolden(t *testing.T) {
	samples := append(mediaSamples(), DeleteMedia{ID: "m1", DID: "did:plc:alice", ServerOper: true},
		AddMediaHolder{ID: "m1", Node: "n2"}, DropMediaHolder{Node: "n1"})
	golden := append(mediaGolden(fsmtest.GoldenEnv),
		"\x2d\x00"+fsmtest.GoldenEnv+`{"id":"m1","did":"did:plc:alice","server_oper":true}}`,
		"\x2e\x00"+fsmtest.GoldenEnv+`{"id":"m1","node":"n2"}}`,
		"\x2f\x00"+fsmtest.GoldenEnv+`{"node":"n1"}}`)
	fsmtest.CheckGolden(t, samples, golden)
	fsmtest.CheckSampled(t, samples, module())
}

// TestLevels: the commands added since v0.1.0 need level 1, and so does a RecordMedia that uses
// the fields added since.
func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  fsm.Command
		want int
	}{
		{"record media (v0.1.0)", RecordMedia{Object: MediaObject{ID: "m", Holder: "n1"}, Quota: 5}, 0},
		{"record media held by its node alone", RecordMedia{Object: MediaObject{ID: "m", Holder: "n1", Holders: []string{"n1"}}}, 0},
		{"record media with other holders", RecordMedia{Object: MediaObject{ID: "m", Holder: "n1", Holders: []string{"n1", "n2"}}}, 1},
		{"record media within a total budget", RecordMedia{Object: MediaObject{ID: "m", Holder: "n1"}, Total: 1 << 30}, 1},
		{"set media key", SetMediaKey{Key: make([]byte, MediaKeySize)}, 0},
		{"delete media", DeleteMedia{ID: "m"}, 1},
		{"add media holder", AddMediaHolder{ID: "m", Node: "n"}, 1},
		{"drop media holder", DropMediaHolder{Node: "n"}, 1},
	} {
		entry, err := fsm.Encode(tc.cmd, "r", "n", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := fsm.CommandLevel(tc.cmd); got != tc.want {
			t.Errorf("%s: CommandLevel %d, want %d", tc.name, got, tc.want)
		}
		if got := fsm.EntryLevel(entry); got != tc.want {
			t.Errorf("%s: EntryLevel %d, want %d", tc.name, got, tc.want)
		}
	}
}

// randomCommand draws one media command of any type from a small universe.
func randomCommand(c *fsmtest.Chooser) fsm.Command {
	switch c.Intn(6) {
	case 0:
		return RecordMedia{Object: MediaObject{ID: fsmtest.Pick(c, []string{"m1", "m2", "m3"}), Holder: fsmtest.Pick(c, fsmtest.GenNodes),
			Holders: fsmtest.Pick(c, [][]string{nil, fsmtest.GenNodes[:2], fsmtest.GenNodes[1:], {"", "x"}}), Size: int64(c.Intn(100)),
			MIME: "image/png", Uploader: fsmtest.Pick(c, fsmtest.GenDIDs[2:])}}
	case 1:
		return AddMediaHolder{ID: fsmtest.Pick(c, []string{"m1", "m2", "m3", "m9"}), Node: fsmtest.Pick(c, fsmtest.GenNodes)}
	case 2:
		return DropMediaHolder{Node: fsmtest.Pick(c, fsmtest.GenNodes)}
	case 3:
		if c.Intn(3) == 0 {
			return DeleteMedia{ID: fsmtest.Pick(c, []string{"m1", "m2", "m3"}), Expired: true, Holder: fsmtest.Pick(c, fsmtest.GenNodes)}
		}
		return DeleteMedia{ID: fsmtest.Pick(c, []string{"m1", "m2", "m3", "m4"}), DID: fsmtest.Pick(c, fsmtest.GenDIDs[2:]), ServerOper: c.Intn(4) == 0}
	}
	return randomMediaCommand(c)
}

// TestDeterminism applies seeded random logs of media and core commands to machines that must
// agree, one restored from a snapshot halfway.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		for c := range fsmtest.CheckDeterminism(t, fsmtest.RandomLog(seed, 3000, randomCommand), nil) {
			codes[c] = true
		}
	}
	for _, c := range []fsm.Code{fsm.OK, ErrMediaExists, ErrMediaQuota, ErrMediaNotFound, ErrMediaNotYours} {
		if !codes[c] {
			t.Errorf("no log answered %s", c)
		}
	}
}
