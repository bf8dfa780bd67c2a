package irc_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// withOper configures the OPER credentials admin / hunter2.
func withOper(c *Config) { c.Opers = map[string]string{"admin": "hunter2"} }

// operUp makes c a server operator.
func operUp(t *testing.T, c *ircclient.Client) {
	t.Helper()
	sendLines(t, c, "OPER admin hunter2")
	expect(t, c, "381")
}

// setWallops sets or clears user mode +w on nick's connection and waits for the change.
func setWallops(t *testing.T, c *ircclient.Client, nick string, on bool) {
	t.Helper()
	change := "-w"
	if on {
		change = "+w"
	}
	sendLines(t, c, "MODE "+nick+" "+change)
	expectFrom(t, c, nick, "MODE", nick, change)
}

// expectWallops waits for a WALLOPS with text from nick's full hostmask.
func expectWallops(t *testing.T, c *ircclient.Client, nick, text string) {
	t.Helper()
	m := expectFrom(t, c, nick, "WALLOPS", text)
	if !strings.HasPrefix(m.Source, nick+"!") || !strings.Contains(m.Source, "@") || len(m.Params) != 1 {
		t.Fatalf("WALLOPS = %q, want :%s!<user>@<host> WALLOPS :%s", m.String(), nick, text)
	}
}

// refuteWallops checks that c got no WALLOPS: everything sent to it before a PING is read.
func refuteWallops(t *testing.T, c *ircclient.Client) {
	t.Helper()
	refuteMsg(t, drain(t, c), "WALLOPS")
}

// TestIRCWallops: an operator's WALLOPS reaches the users with +w (the sender too when it has +w),
// not those without; others get 481; +w and -w show in 221 and the 004 user modes list w.
func TestIRCWallops(t *testing.T) {
	n := startNode(t, t.TempDir(), withOper)
	op, _ := guest(t, n, "wop")
	plus, _ := guest(t, n, "wplus")
	minus, _ := guest(t, n, "wminus")
	user, _ := guest(t, n, "wuser")

	t.Run("004 lists user mode w", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "NICK wnew", "USER u 0 * :u")
		m := expect(t, c, "004")
		if modes := m.Param(3); !strings.Contains(modes, "w") || !strings.Contains(modes, "i") || !strings.Contains(modes, "o") {
			t.Fatalf("004 user modes %q", modes)
		}
	})
	t.Run("MODE +w and -w", func(t *testing.T) {
		setWallops(t, plus, "wplus", true)
		sendLines(t, plus, "MODE wplus")
		expectParams(t, plus, "221", "wplus", "+w")
		setWallops(t, minus, "wminus", true)
		setWallops(t, minus, "wminus", false)
		sendLines(t, minus, "MODE wminus")
		expectParams(t, minus, "221", "wminus", "+")
		sendLines(t, minus, "MODE wminus +iw-w")
		expectFrom(t, minus, "wminus", "MODE", "wminus", "+i")
		sendLines(t, minus, "MODE wminus")
		expectParams(t, minus, "221", "wminus", "+i")
	})
	t.Run("refused", func(t *testing.T) {
		for _, tt := range []struct {
			line string
			want []string
		}{
			{"WALLOPS :hi everyone", []string{"481", "wuser", "Permission Denied- You're not an IRC operator"}},
			{"WALLOPS", []string{"461", "wuser", "WALLOPS", "Not enough parameters"}},
		} {
			sendLines(t, user, tt.line)
			expectParams(t, user, tt.want[0], tt.want[1:]...)
		}
		refuteWallops(t, plus)
	})
	t.Run("delivered to +w", func(t *testing.T) {
		operUp(t, op)
		sendLines(t, op, "WALLOPS :hello operators")
		expectWallops(t, plus, "wop", "hello operators")
		refuteMsg(t, drain(t, op), "WALLOPS") // the sender has no +w
		refuteWallops(t, minus)
		refuteWallops(t, user)
	})
	t.Run("the sender with +w gets it too", func(t *testing.T) {
		setWallops(t, op, "wop", true)
		sendLines(t, op, "WALLOPS :again")
		expectWallops(t, op, "wop", "again")
		expectWallops(t, plus, "wop", "again")
	})
}

// TestIRCWallopsFlood: WALLOPS counts against the message flood limit (5 messages, then one per
// 400 ms): of 12 sent at once, some are refused with a notice.
func TestIRCWallopsFlood(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		withOper(c)
		c.NoFloodLimits = false
	})
	op, _ := guest(t, n, "wflood")
	operUp(t, op)
	setWallops(t, op, "wflood", true)
	for i := range 12 {
		sendLines(t, op, fmt.Sprintf("WALLOPS :burst %d", i))
	}
	msgs := drain(t, op)
	got := 0
	for _, m := range msgs {
		if m.Command == "WALLOPS" {
			got++
		}
	}
	if got < 5 || got == 12 {
		t.Fatalf("%d of 12 WALLOPS delivered at once, want at least the 5 of the burst and not all: %v", got, lines(msgs))
	}
	if _, ok := findMsg(msgs, "NOTICE", "Flood protection: you are sending messages too fast"); !ok {
		t.Fatalf("no flood notice: %v", lines(msgs))
	}
}

// TestIRCLinks: LINKS lists this server with hop count 0 and --server-info, filtered by a mask.
func TestIRCLinks(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.ServerInfo = "a test server" })
	c, _ := guest(t, n, "linker")
	drain(t, c) // the rest of the welcome
	for _, tt := range []struct {
		line  string
		lines [][]string // the replies' parameters after the nick, in order
	}{
		{"LINKS", [][]string{{"364", "palaver.test", "palaver.test", "0 a test server"}, {"365", "*", "End of /LINKS list"}}},
		{"LINKS PALAVER.*", [][]string{{"364", "palaver.test", "palaver.test", "0 a test server"}, {"365", "PALAVER.*", "End of /LINKS list"}}},
		{"LINKS *.invalid", [][]string{{"365", "*.invalid", "End of /LINKS list"}}},
		{"LINKS palaver.test *", [][]string{{"364", "palaver.test", "palaver.test", "0 a test server"}, {"365", "*", "End of /LINKS list"}}},
		{"LINKS other.example *", [][]string{{"402", "other.example", "No such server"}}},
	} {
		sendLines(t, c, tt.line)
		msgs := drain(t, c)
		var got []string
		for _, m := range msgs {
			got = append(got, m.Command+" "+strings.Join(m.Params, "|"))
		}
		var want []string
		for _, l := range tt.lines {
			want = append(want, l[0]+" "+strings.Join(append([]string{"linker"}, l[1:]...), "|"))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tt.line, got, want)
		}
	}
}

// TestIRCWallopsAndLinksAcrossNodes: an operator's WALLOPS on one node reaches the +w users of
// the others and no one without +w; LINKS on each node lists it and the two other nodes, each
// with the description it gossips.
func TestIRCWallopsAndLinksAcrossNodes(t *testing.T) {
	var started atomic.Int32
	nodes := startNamedCluster(t, "links", func(c *Config) {
		withOper(c)
		c.ServerInfo = fmt.Sprintf("node %d", started.Add(1))
	})
	op, _ := guest(t, nodes[0], "xwop")
	plusB, _ := guest(t, nodes[1], "xwplusb")
	minusB, _ := guest(t, nodes[1], "xwminusb")
	plusC, _ := guest(t, nodes[2], "xwplusc")
	setWallops(t, plusB, "xwplusb", true)
	setWallops(t, plusC, "xwplusc", true)
	operUp(t, op)

	sendLines(t, op, "WALLOPS :to every node")
	expectWallops(t, plusB, "xwop", "to every node")
	expectWallops(t, plusC, "xwop", "to every node")
	refuteWallops(t, minusB)

	infos := map[string]string{"node-a.links": "node 1", "node-b.links": "node 2", "node-c.links": "node 3"}
	for i, c := range []*ircclient.Client{op, plusB, plusC} {
		self := []string{"node 1", "node 2", "node 3"}[i]
		var got []string
		eventually(t, "LINKS lists the three nodes", func() bool {
			sendLines(t, c, "LINKS")
			got = got[:0]
			for _, m := range drain(t, c) {
				if m.Command == "364" {
					got = append(got, strings.Join(m.Params[1:], "|"))
				}
			}
			return len(got) == 3
		})
		if want := "palaver.test|palaver.test|0 " + self; got[0] != want {
			t.Fatalf("node %d: first 364 %q, want %q", i+1, got[0], want)
		}
		for _, row := range got[1:] {
			f := strings.Split(row, "|")
			if info, ok := infos[f[0]]; !ok || info == self || f[1] != "palaver.test" || f[2] != "1 "+info {
				t.Fatalf("node %d: 364 %q", i+1, row)
			}
		}
	}
}
