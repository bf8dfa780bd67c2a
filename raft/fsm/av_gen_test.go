package fsm

import "strconv"

// genCalls is the small universe of call ids of the command generator.
var genCalls = func() []string {
	out := make([]string, 6)
	for i := range out {
		out[i] = "call" + strconv.Itoa(i)
	}
	return out
}()

// randomAVCommand draws a call command for the determinism test and the fuzzer.
func randomAVCommand(c chooser) Command {
	call := pick(c, genCalls)
	did := pick(c, []string{"did:plc:d1", "did:plc:d2", "did:plc:d3", "did:plc:d4", ""})
	switch n := c.intn(44); {
	case n < 5:
		return AVStart{CallID: call, Channel: pick(c, []string{"#a", "#b"}), Node: pick(c, genNodes), DID: did}
	case n < 26:
		return AVJoin{CallID: call, DID: pick(c, []string{"did:plc:d1", "did:plc:d2", ""})}
	case n < 34:
		return AVLeave{CallID: call, DID: pick(c, []string{"did:plc:d1", "did:plc:d2"}), Reason: pick(c, genTexts)}
	case n < 36:
		return AVEnd{CallID: call, By: did, Reason: pick(c, genTexts)}
	case n < 37:
		// The same draws as AVEnd (the streams of the other generators stay as they were); the
		// session and the operator flag follow from the call drawn.
		i := int(call[len(call)-1] - '0')
		return AVOperatorEnd{CallID: call, DID: did, Session: genSessions[i], ServerOper: i == 5, Reason: pick(c, genTexts)}
	case n < 40:
		return AVAddArtifact{CallID: call, ArtifactID: pick(c, []string{"a1", "a2", "a3", ""}), DID: did,
			Kind: pick(c, []string{"recording", "notes", "link", "video"}),
			URL:  pick(c, []string{"https://example.com/r", "http://example.com/n", "ftp://example.com/x"}), Title: pick(c, genTexts)}
	default:
		return AVEndNode{Node: pick(c, genNodes), Reason: pick(c, genTexts)}
	}
}
