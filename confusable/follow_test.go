package confusable

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// The universe of the change sequences: few sessions, nicks that look alike across scripts and
// case, two nodes and a few DIDs, so that registrations, renames, logins and ends collide.
var (
	followSessions = []string{"s0", "s1", "s2", "s3", "s4"}
	followNicks    = []string{"victim", "vict\u0456m", "VICTIM", "paypal", "paypaI", "rn", "m", "alice", "Alice", "bob"}
	followDIDs     = []string{"", "did:plc:d1", "did:plc:d2", "did:plc:d3"}
	followNodes    = []string{"node-a", "node-b"}
)

// replica is one node's copy of the state, with the look-alike index that node keeps by it.
type replica struct {
	m *fsm.Machine
	x Index
}

// follow drives two replicas through the same log of changes drawn from ops (five bytes an op)
// and checks, whenever an op asks, that each replica's index — kept change by change — holds
// exactly what an index rebuilt from that replica's state holds, and answers every lookup alike.
// Sessions live on either node, so each replica's index holds the other node's nicks too. An op
// may also restore the second replica from a snapshot (its index must notice and rebuild).
func follow(t *testing.T, ops []byte) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reps := []*replica{{m: fsm.New(quiet)}, {m: fsm.New(quiet)}}
	reps[0].m.SetLocalNode(followNodes[0])
	reps[1].m.SetLocalNode(followNodes[1])
	for _, r := range reps { // from here on, each index follows the changes
		r.m.Read(func(st *fsm.State) { agree(t, "empty", st, &r.x) })
	}
	pick := func(b byte, xs []string) string { return xs[int(b)%len(xs)] }
	for i := 0; i+5 <= len(ops); i += 5 {
		op := ops[i : i+5]
		se, nick, did := pick(op[1], followSessions), pick(op[2], followNicks), pick(op[3], followDIDs)
		var cmd fsm.Command
		switch op[0] % 8 {
		case 0, 1:
			cmd = fsm.RegisterSession{ID: se, Node: pick(op[4], followNodes), Incarnation: "inc", Nick: nick, User: "u", Host: "h", DID: did}
		case 2:
			cmd = fsm.ChangeNick{Session: se, Nick: nick}
		case 3:
			cmd = fsm.Authenticate{Session: se, DID: pick(op[3]|1, followDIDs), TokenHash: fmt.Sprintf("t%d", i)}
		case 4:
			cmd = fsm.EndSession{Session: se, Reason: "bye"}
		case 5:
			cmd = fsm.PurgeNode{Node: pick(op[4], followNodes), Reason: "gone"}
		case 6:
			reps[1].m = fsmtest.Restored(t, reps[1].m)
			continue
		}
		if cmd != nil {
			data, err := fsm.Encode(cmd, fmt.Sprintf("r%d", i), "node-a", 1_700_000_000_000+int64(i))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				r.m.Apply(uint64(i+1), data)
			}
		}
		if op[0]%8 == 7 || op[4]%3 == 0 {
			for n, r := range reps {
				r.m.Read(func(st *fsm.State) { agree(t, fmt.Sprintf("replica %d after op %d", n, i/5), st, &r.x) })
			}
		}
	}
	for n, r := range reps {
		r.m.Read(func(st *fsm.State) { agree(t, fmt.Sprintf("replica %d at the end", n), st, &r.x) })
	}
}

// agree checks that x, brought up to st, holds what an index rebuilt from st holds, and that both
// find a look-alike (or none) for every nick of the universe and a few beyond it.
func agree(t *testing.T, where string, st *fsm.State, x *Index) {
	t.Helper()
	var fresh Index
	fresh.rebuild(st)
	for _, nick := range append(slices.Clone(followNicks), "v1ctim", "PAYPAL", "carol", "b0b") {
		h, ok := x.LookAlike(st, nick, nil)
		fh, fok := fresh.LookAlike(st, nick, nil)
		if ok != fok {
			t.Fatalf("%s: LookAlike(%+q) = %+v %v, rebuilt: %+v %v", where, nick, h, ok, fh, fok)
		}
	}
	if got, want := contents(x), contents(&fresh); !slices.Equal(got, want) {
		t.Fatalf("%s: index kept by changes\n%s\nrebuilt\n%s", where, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// contents lists an index's skeleton → holder pairs, sorted, checking that its two maps agree.
func contents(x *Index) []string {
	var out []string
	n := 0
	for sk, hs := range x.bySkeleton {
		for _, h := range hs {
			if !slices.Contains(x.holders[h], sk) {
				out = append(out, fmt.Sprintf("ORPHAN %q %+v", sk, h))
			}
			out = append(out, fmt.Sprintf("%q %+q", sk, h))
			n++
		}
	}
	for _, sks := range x.holders {
		n -= len(sks)
	}
	if n != 0 {
		out = append(out, fmt.Sprintf("HOLDERS OFF BY %d", n))
	}
	slices.Sort(out)
	return out
}

func TestIndexFollowsChanges(t *testing.T) {
	// op: kind (0–1 register, 2 rename, 3 authenticate, 4 end, 5 purge a node, 6 restore the
	// second replica, 7 check), session, nick, DID, node; a node byte divisible by 3 also checks.
	tests := []struct {
		name string
		ops  []byte
	}{
		{"register, check, end", []byte{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 7, 0, 0, 0, 0, 4, 0, 0, 0, 0}},
		{"a look-alike registered on the other node", []byte{0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 7, 0, 0, 0, 0}},
		{"rename frees the old nick's skeleton", []byte{0, 0, 0, 0, 1, 2, 0, 3, 0, 1, 7, 0, 0, 0, 1}},
		{"a guest authenticates and claims its nick", []byte{0, 0, 3, 0, 1, 3, 0, 0, 0, 0, 7, 0, 0, 0, 1}},
		{"a DID's second nick moves ownership", []byte{0, 0, 3, 1, 1, 4, 0, 0, 0, 1, 0, 1, 7, 1, 1, 7, 0, 0, 0, 1}},
		{"the other node purged", []byte{0, 0, 0, 0, 1, 0, 1, 3, 0, 0, 0, 2, 7, 1, 1, 5, 0, 0, 0, 1, 7, 0, 0, 0, 1}},
		{"restore, then more changes", []byte{0, 0, 0, 1, 0, 7, 0, 0, 0, 0, 6, 0, 0, 0, 1, 2, 0, 9, 0, 1, 7, 0, 0, 0, 1}},
		{"end of a session that was never there", []byte{4, 3, 0, 0, 0, 7, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { follow(t, tt.ops) })
	}
}

// TestIndexFollowsRandomChanges: many random change sequences, checked along the way.
func TestIndexFollowsRandomChanges(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 7))
		ops := make([]byte, 5*(20+r.IntN(200)))
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { follow(t, ops) })
	}
}

// TestIndexFarBehind: a reader more changes behind than the state keeps rebuilds, and is right.
func TestIndexFarBehind(t *testing.T) {
	ops := []byte{0, 0, 0, 1, 0, 7, 0, 0, 0, 0}
	for i := range 6000 { // rename back and forth: two changes each, no check between
		ops = append(ops, 2, 0, byte(1+i%2), 0, 1)
	}
	follow(t, append(ops, 7, 0, 0, 0, 0))
}

func FuzzIndexFollowsChanges(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 7, 0, 0, 0, 0, 4, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 3, 1, 1, 4, 0, 0, 0, 1, 0, 1, 7, 1, 1, 6, 0, 0, 0, 1, 5, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 5*400 {
			ops = ops[:5*400]
		}
		follow(t, ops)
	})
}
