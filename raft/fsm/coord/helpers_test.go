package coord

import (
	"encoding/json"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
	didCarol = "did:plc:carol"
)

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
