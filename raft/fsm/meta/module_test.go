package meta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestEncodingGolden pins the log encoding of every command type of the module: the bytes of
// the entries logs already hold.
func TestEncodingGolden(t *testing.T) {
	samples := []fsm.Command{
		Set{Session: "s1", Channel: "#c", Key: "url", Value: "https://example.com"},
		Set{Session: "s1", Key: "url", Delete: true},
		Clear{Session: "s1"},
	}
	env := fsmtest.GoldenEnv
	fsmtest.CheckGolden(t, samples, []string{
		"\x21\x00" + env + `{"session":"s1","channel":"#c","key":"url","value":"https://example.com"}}`,
		"\x21\x00" + env + `{"session":"s1","key":"url","delete":true}}`,
		"\x22\x00" + env + `{"session":"s1"}}`,
	})
	fsmtest.CheckSampled(t, samples, module())
}

// TestLevels: both command types are of v0.1.0, level 0.
func TestLevels(t *testing.T) {
	for _, cmd := range []fsm.Command{Set{Session: "s1", Key: "k", Value: "v"}, Clear{Session: "s1", Channel: "#c"}} {
		entry, err := fsm.Encode(cmd, "r", "n", 1)
		if err != nil {
			t.Fatal(err)
		}
		if l, e := fsm.CommandLevel(cmd), fsm.EntryLevel(entry); l != 0 || e != 0 {
			t.Errorf("%T: CommandLevel %d, EntryLevel %d, want 0", cmd, l, e)
		}
	}
}

// randomCommand draws a metadata command, or a rename or kick that moves or deletes a channel,
// from the small universe of fsmtest.
func randomCommand(c *fsmtest.Chooser) fsm.Command {
	s := fsmtest.Pick(c, fsmtest.GenSessions)
	channel := fsmtest.Pick(c, append([]string{"", ""}, fsmtest.GenChannels...))
	switch n := c.Intn(12); {
	case n == 0:
		return fsm.RenameChannel{Session: s, Channel: fsmtest.Pick(c, fsmtest.GenChannels), NewName: fsmtest.Pick(c, []string{"#z", "#y", "&x", "#a"})}
	case n == 1:
		return fsm.Kick{Session: s, Channel: fsmtest.Pick(c, fsmtest.GenChannels), Target: fsmtest.Pick(c, fsmtest.GenSessions)}
	case n == 2:
		return Clear{Session: s, Channel: channel}
	default:
		del := c.Intn(3) == 0
		value := fsmtest.Pick(c, []string{"v1", "https://example.com", ""})
		if del {
			value = ""
		}
		return Set{Session: s, Channel: channel, Key: fsmtest.Pick(c, []string{"avatar", "url", "Bad Key", "display-name"}), Value: value, Delete: del}
	}
}

// TestDeterminism applies seeded random logs of metadata and core commands to machines that must
// agree, one restored from a snapshot halfway; the metadata left must have an owner: a channel
// that exists under that name (renamed ones moved, deleted ones dropped) or a guest session
// that is still there.
func TestDeterminism(t *testing.T) {
	codes := map[fsm.Code]bool{}
	for _, seed := range []uint64{1, 2, 3} {
		for c := range fsmtest.CheckDeterminism(t, fsmtest.RandomLog(seed, 3000, randomCommand), ownersExist) {
			codes[c] = true
		}
	}
	for _, c := range []fsm.Code{fsm.OK, fsm.NoChange, fsm.ErrInvalid, ErrKeyNotSet, ErrKeyNoPermission} {
		if !codes[c] {
			t.Errorf("no log answered %s", c)
		}
	}
}

// TestOwnersFollowTheCore applies random metadata and core commands one by one and checks after
// each that the metadata kept has an owner: the lifecycle hooks dropped a deleted channel's and
// an ended guest's keys and moved a renamed channel's at once.
func TestOwnersFollowTheCore(t *testing.T) {
	c := fsmtest.NewChooser(5)
	m := fsmtest.New()
	var err error
	for i := 0; i < 3000 && err == nil; i++ {
		cmd := randomCommand(c)
		if c.Intn(3) == 0 {
			cmd = fsmtest.RandomCore(c)
		}
		if _, err = m.Apply(cmd); err != nil {
			t.Fatal(err)
		}
		m.Read(func(st *fsm.State) {
			if err = ownersExist(st); err != nil {
				err = fmt.Errorf("after %d commands, the last %#v: %w", i+1, cmd, err)
			}
		})
	}
	if err != nil {
		t.Error(err)
	}
}

func ownersExist(st *fsm.State) error {
	m := section.Of(st)
	if m == nil {
		return nil
	}
	for owner := range m.Owners {
		switch id, guest := strings.CutPrefix(owner, guestOwner("")); {
		case guest && !sessionExists(st, id):
			return fmt.Errorf("metadata of ended guest session %s", id)
		case owner[0] == '#' || owner[0] == '&':
			if !st.ChannelExists(owner) {
				return fmt.Errorf("metadata of channel %s, which does not exist", owner)
			}
		}
	}
	return nil
}

// sessionExists reports whether session id is in st.
func sessionExists(st *fsm.State, id string) bool {
	_, ok := st.Session(id)
	return ok
}
