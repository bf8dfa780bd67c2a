package fsm

import (
	"fmt"
	"math/rand/v2"
)

// chooser is the source of choices for the command generator: a seeded PRNG for the determinism
// test, the fuzzer's bytes for FuzzApply.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

type byteChooser struct{ data []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func pick[T any](c chooser, xs []T) T { return xs[c.intn(len(xs))] }

// A small universe so that commands collide: the same few sessions, nicks, DIDs and channels.
var (
	genSessions = []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
	genNodes    = []string{"node-a", "node-b"}
	genIncs     = []string{"inc-1", "inc-2"}
	genNicks    = []string{"ann", "Ann", "BOB", "bob", "cy", "dee", "eve", "Eve", "fay", "gus", "ann_", "hal", "ivy", "jo", "kim", ""}
	genDIDs     = []string{"", "", "did:plc:d1", "did:plc:d2", "did:plc:d3", "did:plc:d4"}
	genTokens   = []string{"", "t0", "t1", "t2", "t3", "t4", "t5"}
	genChannels = []string{"#a", "#b", "#c", "#d", "&e", "#a", "#b", "#B", "bad"}
	genMasks    = []string{"*!*@*", "ann!*@*", "*!u*@host-s1", "BOB!*@*", "did:plc:d1", "did:plc:d2", "  ", "*?*", "e?e!*"}
	genKeys     = []string{"", "k1", "k2", "bad key"}
	genTexts    = []string{"", "hello", "bye", "another text"}
	genMsgIDs   = []string{"m1", "m2", "m3", ""}
	genKIDs     = []string{"k1", "k2", ""}
	genLetters  = []string{"o", "h", "v", "b", "I", "i", "t", "n", "m", "E", "k", "l"}
)

// extraGenerators draw commands of the surfaces that register their types from their own files;
// their tests add to it from init.
var extraGenerators []func(c chooser) Command

// randomCommand draws one command of any type from the small universe.
func randomCommand(c chooser) Command {
	sess := func() string { return pick(c, genSessions) }
	ch := func() string { return pick(c, genChannels) }
	if len(extraGenerators) > 0 && c.intn(6) == 0 {
		return pick(c, extraGenerators)(c)
	}
	switch c.intn(40) {
	case 0, 1, 19, 20, 21:
		id := sess()
		return RegisterSession{ID: id, Node: pick(c, genNodes), Incarnation: pick(c, genIncs), Nick: pick(c, genNicks),
			User: "u" + id, Host: "host-" + id, Realname: "r", DID: pick(c, genDIDs), TokenHash: pick(c, genTokens),
			Oper: c.intn(8) == 0, Secure: c.intn(2) == 0}
	case 2:
		return ChangeNick{Session: sess(), Nick: pick(c, genNicks)}
	case 3:
		return Authenticate{Session: sess(), DID: pick(c, genDIDs), TokenHash: pick(c, genTokens), Host: pick(c, []string{"", "cloak"}),
			Oper: c.intn(10) == 0}
	case 4:
		if c.intn(3) == 0 {
			return EndSession{Session: sess(), Reason: pick(c, genTexts)}
		}
		return Away{Session: sess(), Text: pick(c, genTexts)}
	case 5, 6, 7, 8:
		return Join{Session: sess(), Channel: ch(), Key: pick(c, genKeys)}
	case 9, 10:
		return Part{Session: sess(), Channel: ch(), Reason: pick(c, genTexts)}
	case 11:
		return Kick{Session: sess(), Channel: ch(), Target: sess(), Reason: pick(c, genTexts)}
	case 12:
		return Topic{Session: sess(), Channel: ch(), Text: pick(c, genTexts)}
	case 13, 14, 15:
		m := Mode{Session: sess(), Channel: ch()}
		for range 1 + c.intn(3) {
			mc := ModeChange{Add: c.intn(3) != 0, Mode: pick(c, genLetters)}
			switch mc.Mode {
			case "o", "h", "v":
				mc.Target = sess()
			case "b", "I":
				mc.Arg = pick(c, genMasks)
			case "k":
				mc.Arg = pick(c, genKeys)
			}
			m.Changes = append(m.Changes, mc)
		}
		return m
	case 16:
		return Invite{Session: sess(), Channel: ch(), Target: sess()}
	case 17:
		return Away{Session: sess(), Text: pick(c, genTexts)}
	case 18:
		if c.intn(5) == 0 {
			return ExpireChannels{UnownedAfter: pick(c, []int64{0, 1000, 3_600_000}), OwnedAfter: pick(c, []int64{0, 1000, 86_400_000})}
		}
		if c.intn(6) == 0 {
			return PurgeNode{Node: pick(c, genNodes), Keep: pick(c, append([]string{""}, genIncs...)), Reason: "purge"}
		}
		return Oper{Session: sess()}
	case 24:
		return Pin{Session: sess(), Channel: ch(), MsgID: pick(c, genMsgIDs)}
	case 25:
		return Unpin{Session: sess(), Channel: ch(), MsgID: pick(c, genMsgIDs)}
	case 26, 27:
		return RegisterKey{DID: pick(c, genDIDs), KID: pick(c, genKIDs), PublicKey: testKey(byte(c.intn(3))),
			Source: pick(c, []string{"", "local-session", "server-key"}), ExpiresAt: pick(c, []int64{0, 0, 1_700_000_000, 1_900_000_000})}
	case 30, 31:
		if c.intn(5) == 0 {
			return RenameChannel{Session: sess(), Channel: ch(), NewName: pick(c, []string{"#z", "&y", ch()}), Reason: pick(c, genTexts)}
		}
		return Topic{Session: sess(), Channel: ch(), Text: pick(c, genTexts)}
	case 28:
		return RetireKey{DID: pick(c, genDIDs), KID: pick(c, genKIDs)}
	case 32, 33, 34, 35, 36, 37, 38, 39:
		return Join{Session: sess(), Channel: ch(), Key: pick(c, genKeys)}
	case 22, 29:
		switch c.intn(9) {
		case 0:
			return FederatedMode{Channel: ch(), SetBy: "bob!u@peer.example", SetByDID: pick(c, genDIDs), AddOnly: c.intn(3) == 0,
				Changes: []ModeChange{{Add: c.intn(2) == 0, Mode: pick(c, []string{"i", "t", "n", "m"})},
					{Add: c.intn(2) == 0, Mode: pick(c, []string{"b", "I"}), Arg: pick(c, genMasks)},
					{Add: c.intn(2) == 0, Mode: "o", Arg: pick(c, genDIDs)}}}
		case 1:
			return FederatedPin{Channel: ch(), MsgID: pick(c, genMsgIDs), Unpin: c.intn(2) == 0, PinnedBy: "bob!u@peer.example"}
		case 2:
			m := RemoteMember{Nick: pick(c, []string{"rb", "rc", "RB"}), User: "u", Host: "peer.example", DID: pick(c, genDIDs)}
			return RemotePresence{Peer: pick(c, []string{"did:web:p1.example", "did:web:p2.example"}),
				Op:      pick(c, []string{RemoteJoin, RemoteJoin, RemotePart, RemoteQuit, RemoteNick, RemoteMembers, RemoteClear}),
				Channel: ch(), Member: m, Members: []RemoteMember{m}[:c.intn(2)], NewNick: pick(c, []string{"rb", "rd"})}
		case 3, 6, 7:
			return FederatedKick{Channel: ch(), Target: sess(), By: "bob!u@peer.example", Reason: pick(c, genTexts)}
		case 4:
			return FederatedInvite{Channel: ch(), Target: sess(), By: "bob!u@peer.example"}
		case 5:
			return FederatedMode{Session: sess(), Channel: ch(), SetBy: "x!u@h", Changes: []ModeChange{{Add: c.intn(2) == 0, Mode: "o", Arg: pick(c, genDIDs)}}}
		}
		return FederatedTopic{Channel: ch(), Text: pick(c, []string{"", "remote topic", "other"}), SetBy: "bob!u@peer.example", SetByDID: pick(c, genDIDs)}
	default:
		if c.intn(4) == 0 {
			return SetRealname{Session: sess(), Realname: pick(c, genTexts)}
		}
		if c.intn(4) == 0 {
			return SetBot{Session: sess(), Bot: c.intn(2) == 0}
		}
		if c.intn(4) == 0 {
			return SetInvisible{Session: sess(), Invisible: c.intn(2) == 0}
		}
		if c.intn(3) == 0 {
			return SetReadMarker{DID: pick(c, genDIDs), Target: ch(), At: pick(c, []int64{0, 1_700_000_000_000, 1_800_000_000_000})}
		}
		return SetFavorites{DID: pick(c, genDIDs), Favorites: []string{ch(), ch()}[:c.intn(3)]}
	}
}

// randomLog encodes n entries: mostly fresh commands, with retried request ids, undecodable
// entries and unknown ignorable entries mixed in.
func randomLog(seed uint64, n int) [][]byte {
	c := randChooser{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	var rids []string
	out := make([][]byte, 0, n)
	for i := range n {
		ts := int64(1_700_000_000_000 + i*250)
		switch c.intn(50) {
		case 0:
			out = append(out, []byte{byte(TypeJoin), 0, '{', 'x'})
			continue
		case 1:
			out = append(out, append([]byte{77, flagIgnorable}, `{"rid":"u","body":{}}`...))
			continue
		}
		rid := fmt.Sprintf("r%d", i)
		if len(rids) > 0 && c.intn(20) == 0 {
			rid = rids[c.intn(len(rids))] // a retried proposal, possibly with another body
		} else {
			rids = append(rids, rid)
		}
		data, err := Encode(randomCommand(c), rid, pick(c, genNodes), ts)
		if err != nil {
			panic(err)
		}
		out = append(out, data)
	}
	return out
}
