package irc_test

import (
	"slices"
	"strings"
	"testing"
)

// TestIRCUserhostInNames follows IRCv3 userhost-in-names: the capability is offered, and a client
// that negotiated it gets nick!user@host (after the prefixes) in every 353, the JOIN's included;
// a client without it gets bare nicks.
func TestIRCUserhostInNames(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	raw := dial(t, n)
	sendLines(t, raw, "CAP LS 302")
	if _, caps := expectCapLS(t, raw); !slices.Contains(caps, "userhost-in-names") {
		t.Fatalf("CAP LS %v lacks userhost-in-names", caps)
	}
	op, _ := guest(t, n, "uhnop")
	joinChannels(t, op, "#uhn")
	full, _ := guest(t, n, "uhnfull", "userhost-in-names", "multi-prefix")
	bare, _ := guest(t, n, "uhnbare")

	sendLines(t, full, "JOIN #uhn")
	names := strings.Fields(expect(t, full, "353", "#uhn").Param(3))
	if !slices.ContainsFunc(names, func(s string) bool { return strings.HasPrefix(s, "@uhnop!") && strings.Contains(s, "@") }) {
		t.Fatalf("353 on JOIN = %v, want @uhnop!user@host", names)
	}
	for _, entry := range names {
		nick, rest, ok := strings.Cut(strings.TrimLeft(entry, "@%+"), "!")
		user, host, ok2 := strings.Cut(rest, "@")
		if !ok || !ok2 || nick == "" || user == "" || host == "" {
			t.Fatalf("353 entry %q is not nick!user@host", entry)
		}
	}
	sendLines(t, full, "NAMES #uhn")
	if m := expect(t, full, "353", "#uhn"); !strings.Contains(m.Param(3), "uhnfull!") {
		t.Fatalf("NAMES = %q", m.String())
	}

	sendLines(t, bare, "JOIN #uhn")
	if m := expect(t, bare, "353", "#uhn"); strings.Contains(m.Param(3), "!") {
		t.Fatalf("353 without the capability = %q", m.String())
	}
}

// TestIRCAdvertisedChannelModesExist: every channel mode ISUPPORT CHANMODES advertises is
// accepted by MODE (lists answer their end numeric, the others set and unset), so a client never
// relies on a mode the server lacks.
func TestIRCAdvertisedChannelModesExist(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := guest(t, n, "modeadv")
	joinChannels(t, op, "#modeadv")
	sendLines(t, op, "VERSION")
	var chanmodes string
	for _, tok := range expect(t, op, "005", "CHANMODES=").Params {
		if v, ok := strings.CutPrefix(tok, "CHANMODES="); ok {
			chanmodes = v
		}
	}
	groups := strings.Split(chanmodes, ",")
	if len(groups) != 4 {
		t.Fatalf("CHANMODES=%s", chanmodes)
	}
	listEnd := map[byte]string{'b': "368", 'e': "349", 'I': "347"}
	for _, mode := range []byte(groups[0]) {
		t.Run("list "+string(mode), func(t *testing.T) {
			end, ok := listEnd[mode]
			if !ok {
				t.Fatalf("list mode %c has no known end numeric", mode)
			}
			sendLines(t, op, "MODE #modeadv "+string(mode))
			expect(t, op, end, "#modeadv")
		})
	}
	sendLines(t, op, "MODE #modeadv")
	current := expect(t, op, "324", "#modeadv").Param(2) // a new channel's defaults are set: unset them first
	arg := map[byte]string{'k': "sesame", 'l': "5"}
	for _, mode := range []byte(groups[1] + groups[2] + groups[3]) {
		t.Run("set and unset "+string(mode), func(t *testing.T) {
			set := "MODE #modeadv +" + string(mode)
			if a, ok := arg[mode]; ok {
				set += " " + a
			}
			unset := "MODE #modeadv -" + string(mode)
			if mode == 'k' {
				unset += " *"
			}
			steps := []string{set, unset}
			if strings.IndexByte(current, mode) >= 0 {
				steps = []string{unset, set}
			}
			for _, line := range steps {
				sendLines(t, op, line)
				expect(t, op, "MODE", "#modeadv", line[len("MODE #modeadv "):len("MODE #modeadv ")+2])
			}
		})
	}
}
