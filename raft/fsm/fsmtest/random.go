package fsmtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Chooser draws the choices of a command generator from a seeded PRNG.
type Chooser struct{ r *rand.Rand }

// NewChooser is a chooser seeded with seed.
func NewChooser(seed uint64) *Chooser {
	return &Chooser{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Intn is a choice in [0, n).
func (c *Chooser) Intn(n int) int { return c.r.IntN(n) }

// Pick is one of xs.
func Pick[T any](c *Chooser, xs []T) T { return xs[c.Intn(len(xs))] }

// A small universe, so that generated commands collide: a few sessions, nodes, DIDs (some
// empty) and channel names (one invalid).
var (
	GenSessions = []string{"s0", "s1", "s2", "s3"}
	GenNodes    = []string{"node-a", "node-b"}
	GenDIDs     = []string{"", "", "did:plc:d1", "did:plc:d2", "did:plc:d3"}
	GenChannels = []string{"#a", "#b", "#c", "bad"}
)

// RandomCore draws a session or membership change of the small universe, so that a module's
// commands meet channels, operators and sessions that come and go.
func RandomCore(c *Chooser) fsm.Command {
	s := Pick(c, GenSessions)
	switch c.Intn(5) {
	case 0:
		return fsm.RegisterSession{ID: s, Node: Pick(c, GenNodes), Incarnation: "inc-1", Nick: "n" + s, User: "u", Host: "h",
			DID: Pick(c, GenDIDs), Oper: c.Intn(8) == 0}
	case 1:
		return fsm.EndSession{Session: s}
	case 2:
		return fsm.Part{Session: s, Channel: Pick(c, GenChannels)}
	}
	return fsm.Join{Session: s, Channel: Pick(c, GenChannels)}
}

// RandomLog is n encoded entries: one in three from RandomCore, the others from gen, some of
// them retries of an earlier request id.
func RandomLog(seed uint64, n int, gen func(*Chooser) fsm.Command) [][]byte {
	c := NewChooser(seed)
	out := make([][]byte, 0, n)
	for i := range n {
		cmd := gen(c)
		if c.Intn(3) == 0 {
			cmd = RandomCore(c)
		}
		rid := fmt.Sprintf("r%d", i)
		if i > 0 && c.Intn(20) == 0 {
			rid = fmt.Sprintf("r%d", c.Intn(i))
		}
		data, err := fsm.Encode(cmd, rid, Pick(c, GenNodes), Base+int64(i)*250)
		if err != nil {
			panic(err)
		}
		out = append(out, data)
	}
	return out
}

// CheckDeterminism applies log to three machines, one of them restored from a snapshot halfway:
// they must answer every entry alike and end with the same snapshot; check, when set, then
// judges the final state. It returns how often each result code was answered.
func CheckDeterminism(tb testing.TB, log [][]byte, check func(*fsm.State) error) map[fsm.Code]int {
	tb.Helper()
	quiet := func() *fsm.Machine { return New().Machine }
	a, b, c := quiet(), quiet(), quiet()
	codes := map[fsm.Code]int{}
	for i, e := range log {
		idx := uint64(i + 1)
		ra, rb, rc := a.Apply(idx, e), b.Apply(idx, e), c.Apply(idx, e)
		if !reflect.DeepEqual(ra, rb) || !reflect.DeepEqual(ra, rc) {
			tb.Fatalf("entry %d: results %+v / %+v / %+v", i, ra, rb, rc)
		}
		codes[ra.(fsm.Result).Code]++
		if i == len(log)/2 {
			c = Restored(tb, c)
		}
	}
	if a.Hash() != b.Hash() || !bytes.Equal(Snapshot(tb, a), Snapshot(tb, c)) {
		tb.Error("machines disagree after the same log")
	}
	if check != nil {
		a.Read(func(st *fsm.State) {
			if err := check(st); err != nil {
				tb.Error(err)
			}
		})
	}
	return codes
}

// GoldenEnv is the envelope CheckGolden encodes samples in, up to the body.
const GoldenEnv = `{"rid":"r1","node":"n1","ts":1700000000000,"body":`

// CheckGolden pins the log encoding of commands: samples[i] must encode (request id r1, node
// n1, time 1700000000000) to golden[i], and golden[i] must decode to samples[i], so that entries
// already in logs keep their meaning.
func CheckGolden(tb testing.TB, samples []fsm.Command, golden []string) {
	tb.Helper()
	if len(samples) != len(golden) {
		tb.Fatalf("%d samples, %d golden entries", len(samples), len(golden))
	}
	for i, cmd := range samples {
		got, err := fsm.Encode(cmd, "r1", "n1", 1_700_000_000_000)
		if err != nil {
			tb.Fatal(err)
		}
		if string(got) != golden[i] {
			tb.Errorf("%T encoding drifted:\n got %q\nwant %q", cmd, got, golden[i])
		}
		dec, _, _, err := fsm.Decode([]byte(golden[i]))
		if err != nil || !reflect.DeepEqual(dec, cmd) {
			tb.Errorf("%T: golden entry decodes to %+v, %v", cmd, dec, err)
		}
	}
}
