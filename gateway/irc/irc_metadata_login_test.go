package irc_test

import (
	"encoding/base64"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/meta"
)

// TestIRCGuestMetadataLeavesAtLogin: a registered guest's own keys belong to its connection. When
// the connection logs in (SASL re-authentication with a client password), the keys are cleared
// rather than kept under the guest's session, which a logged-in session never ends as a guest; the
// account's own keys are what the nick shows from then on.
func TestIRCGuestMetadataLeavesAtLogin(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.AccountRegistration.Enabled = true })
	c, _ := guest(t, n, "keeper", "draft/account-registration")
	if m := registerReply(t, c, "REGISTER * * keeperpassphrase"); m.Param(0) != "SUCCESS" {
		t.Fatalf("REGISTER: %q", m.String())
	}
	quit(t, n, c, "keeper")

	tests := []struct {
		name string
		set  []string // the guest's METADATA SET lines
	}{
		{"no keys", nil},
		{"two keys", []string{"METADATA * SET display-name :Early", "METADATA * SET pronouns :they"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, welcome := guest(t, n, "visitor", "sasl", "draft/metadata-2", "batch")
			nick := welcome.Param(0)
			drain(t, g)
			for _, line := range tc.set {
				sendLines(t, g, line)
				expect(t, g, "761")
			}
			syncClient(t, g)
			var owner string
			var before int
			n.Machine().Read(func(st *fsm.State) {
				target, ok := meta.Of(st).Resolve(nick, "", "")
				if !ok {
					t.Fatalf("the guest's nick %s resolves to nobody", nick)
				}
				owner = target.Owner
				before = len(meta.Of(st).Keys(owner))
			})
			if before != len(tc.set) {
				t.Fatalf("%d keys under %s before the login, want %d", before, owner, len(tc.set))
			}
			sendLines(t, g, "AUTHENTICATE PLAIN")
			expectParams(t, g, "AUTHENTICATE", "+")
			sendLines(t, g, "AUTHENTICATE "+base64.StdEncoding.EncodeToString([]byte("\x00keeper\x00keeperpassphrase")))
			expect(t, g, "903")
			n.Machine().Read(func(st *fsm.State) {
				if keys := meta.Of(st).Keys(owner); keys != nil {
					t.Errorf("the guest's keys outlived its login under %s: %v", owner, keys)
				}
			})
			quit(t, n, g, nick)
		})
	}
}
