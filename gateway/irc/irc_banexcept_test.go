package irc_test

import (
	"testing"
)

// TestIRCBanExceptionsAndMute covers +e (a matching exception lets a banned user join and speak;
// the list answers 348/349) and the mute entry m:<mask> (joins allowed, sending refused with 404
// unless voiced or excepted).
func TestIRCBanExceptionsAndMute(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := loginAs(t, n, newEd25519(t), "excop")

	t.Run("+e lifts +b for join and speech", func(t *testing.T) {
		chanOp(t, op, "#exc", "+b banned*!*@*", "+e bannedok!*@*")
		no, _ := guest(t, n, "bannedno")
		sendLines(t, no, "JOIN #exc")
		expectParams(t, no, "474", "bannedno", "#exc", "Cannot join channel (+b)")
		ok, _ := guest(t, n, "bannedok")
		joinChannels(t, ok, "#exc")
		sendLines(t, ok, "PRIVMSG #exc :let through")
		expectFrom(t, op, "bannedok", "PRIVMSG", "#exc", "let through")

		sendLines(t, op, "MODE #exc e")
		expect(t, op, "348", "#exc", "bannedok!*@*")
		expectParams(t, op, "349", "excop", "#exc", "End of channel exception list")

		// Removing the exception silences the member still inside.
		sendLines(t, op, "MODE #exc -e bannedok!*@*")
		expectFrom(t, ok, "excop", "MODE", "#exc", "-e", "bannedok!*@*")
		sendLines(t, ok, "PRIVMSG #exc :again")
		expectParams(t, ok, "404", "bannedok", "#exc", "Cannot send to channel (+b)")
	})

	t.Run("+e by DID", func(t *testing.T) {
		key := newEd25519(t)
		chanOp(t, op, "#excdid", "+b *!*@*", "+e "+key.DID())
		d, _ := loginAs(t, n, key, "anynick")
		joinChannels(t, d, "#excdid")
		g, _ := guest(t, n, "nodid")
		sendLines(t, g, "JOIN #excdid")
		expect(t, g, "474", "#excdid")
	})

	t.Run("m: mutes without keeping out", func(t *testing.T) {
		chanOp(t, op, "#mute", "+b m:hush*!*@*", "+e hushfree!*@*")
		h, _ := guest(t, n, "hushed")
		joinChannels(t, h, "#mute")
		for _, cmd := range []string{"PRIVMSG #mute :hello", "NOTICE #mute :hello", "@+typing=active TAGMSG #mute"} {
			sendLines(t, h, cmd)
		}
		expectParams(t, h, "404", "hushed", "#mute", "Cannot send to channel (muted)")
		expectParams(t, h, "404", "hushed", "#mute", "Cannot send to channel (muted)")
		refuteMsg(t, drain(t, op), "PRIVMSG")

		free, _ := guest(t, n, "hushfree")
		joinChannels(t, free, "#mute")
		sendLines(t, free, "PRIVMSG #mute :excepted")
		expectFrom(t, op, "hushfree", "PRIVMSG", "#mute", "excepted")

		sendLines(t, op, "MODE #mute +v hushed")
		expectFrom(t, h, "excop", "MODE", "#mute", "+v", "hushed")
		sendLines(t, h, "PRIVMSG #mute :voiced now")
		expectFrom(t, op, "hushed", "PRIVMSG", "#mute", "voiced now")
	})
}
