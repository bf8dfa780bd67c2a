package av

import (
	"strconv"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// genCalls is the small universe of call ids of the command generator.
var genCalls = func() []string {
	out := make([]string, 6)
	for i := range out {
		out[i] = "call" + strconv.Itoa(i)
	}
	return out
}()

// randomAVCommand draws a call command for the determinism test and the fuzzer.
func randomAVCommand(c *fsmtest.Chooser) fsm.Command {
	call := fsmtest.Pick(c, genCalls)
	did := fsmtest.Pick(c, []string{"did:plc:d1", "did:plc:d2", "did:plc:d3", "did:plc:d4", ""})
	switch n := c.Intn(44); {
	case n < 5:
		return AVStart{CallID: call, Channel: fsmtest.Pick(c, []string{"#a", "#b"}), Node: fsmtest.Pick(c, fsmtest.GenNodes), DID: did}
	case n < 26:
		return AVJoin{CallID: call, DID: fsmtest.Pick(c, []string{"did:plc:d1", "did:plc:d2", ""})}
	case n < 34:
		return AVLeave{CallID: call, DID: fsmtest.Pick(c, []string{"did:plc:d1", "did:plc:d2"}), Reason: fsmtest.Pick(c, genTexts)}
	case n < 36:
		return AVEnd{CallID: call, By: did, Reason: fsmtest.Pick(c, genTexts)}
	case n < 37:
		// The same draws as AVEnd; the
		// session and the operator flag follow from the call drawn.
		i := int(call[len(call)-1] - '0')
		return AVOperatorEnd{CallID: call, DID: did, Session: "s" + strconv.Itoa(i), ServerOper: i == 5, Reason: fsmtest.Pick(c, genTexts)}
	case n < 40:
		return AVAddArtifact{CallID: call, ArtifactID: fsmtest.Pick(c, []string{"a1", "a2", "a3", ""}), DID: did,
			Kind: fsmtest.Pick(c, []string{"recording", "notes", "link", "video"}),
			URL:  fsmtest.Pick(c, []string{"https://example.com/r", "http://example.com/n", "ftp://example.com/x"}), Title: fsmtest.Pick(c, genTexts)}
	default:
		return AVEndNode{Node: fsmtest.Pick(c, fsmtest.GenNodes), Reason: fsmtest.Pick(c, genTexts)}
	}
}
