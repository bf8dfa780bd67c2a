package coord

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
	didCarol = "did:plc:carol"
)

// harness drives a machine through encoded log entries, as Raft would.
type harness struct {
	*fsmtest.Machine
	tb testing.TB
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHarness(tb testing.TB) *harness { return &harness{fsmtest.New(), tb} }

// apply applies cmd as the next log entry and returns its Result.
func (h *harness) apply(cmd fsm.Command) fsm.Result {
	h.tb.Helper()
	res, err := h.Apply(cmd)
	if err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// mustOK applies each command and fails the test unless it returns OK.
func (h *harness) mustOK(cmds ...fsm.Command) {
	h.tb.Helper()
	h.MustOK(h.tb, cmds...)
}

// read runs f under the machine's read lock.
func (h *harness) read(f func(st *fsm.State)) { h.Read(f) }

// at is a command of this module applied outside a machine to st, stamped time ms: for tests that
// fill the state to its bounds, where going through the log would only be slow.
func at(st *fsm.State, ms int64) *tx {
	return &tx{fsm.NewApplier(st, fsm.Envelope{Time: ms})}
}

func jsonString(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// world registers the sessions most tables start from: alice (did:plc:alice), bob
// (did:plc:bob), guest (no DID), oper (server operator).
func world() []fsm.Command {
	oper := fsmtest.Session("s-oper", "oper", "")
	oper.Oper = true
	return []fsm.Command{fsmtest.Session("s-alice", "alice", didAlice), fsmtest.Session("s-bob", "bob", didBob),
		fsmtest.Session("s-guest", "guest", ""), oper}
}

// chooser is the source of choices for the command generator.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

func pick[T any](c chooser, xs []T) T { return xs[c.intn(len(xs))] }

// A small universe so that commands collide.
var (
	genSessions = []string{"s0", "s1", "s2", "s3"}
	genDIDs     = []string{"", "", "did:plc:d1", "did:plc:d2", "did:plc:d3"}
	genChannels = []string{"#a", "#b", "#c", "bad"}
)

// randomCoreCommand draws a session or membership change, so that the coordination commands
// meet channels, operators and sessions that come and go.
func randomCoreCommand(c chooser) fsm.Command {
	s := pick(c, genSessions)
	switch c.intn(4) {
	case 0:
		return fsm.RegisterSession{ID: s, Node: "node-a", Incarnation: "inc-1", Nick: "n" + s, User: "u", Host: "h",
			DID: pick(c, genDIDs)}
	case 1:
		return fsm.EndSession{Session: s}
	case 2:
		return fsm.Part{Session: s, Channel: pick(c, genChannels)}
	}
	return fsm.Join{Session: s, Channel: pick(c, genChannels)}
}

// randomLog is n encoded entries: coordination commands among core ones, some retried.
func randomLog(seed uint64, n int) [][]byte {
	c := randChooser{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	out := make([][]byte, 0, n)
	for i := range n {
		var cmd fsm.Command
		if c.intn(3) == 0 {
			cmd = randomCoreCommand(c)
		} else {
			cmd = randomCommand(c)
		}
		rid := fmt.Sprintf("r%d", i)
		if i > 0 && c.intn(20) == 0 {
			rid = fmt.Sprintf("r%d", c.intn(i))
		}
		data, err := fsm.Encode(cmd, rid, "node-a", fsmtest.Base+int64(i)*250)
		if err != nil {
			panic(err)
		}
		out = append(out, data)
	}
	return out
}
