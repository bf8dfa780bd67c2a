package confusable

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// BenchmarkLoginCheck is one login's share of the look-alike index with 4,096 nicks owned: a
// session registers (claiming its nick), the next login's nick is checked, the session ends.
func BenchmarkLoginCheck(b *testing.B) {
	m := fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var index uint64
	apply := func(cmd fsm.Command) {
		index++
		data, err := fsm.Encode(cmd, fmt.Sprint("r", index), "n", 1_700_000_000_000)
		if err != nil {
			b.Fatal(err)
		}
		if res := m.Apply(index, data).(fsm.Result); res.Code != fsm.OK {
			b.Fatalf("%T: %v", cmd, res.Code)
		}
	}
	login := func(i int) {
		id := fmt.Sprint("s", i)
		apply(fsm.RegisterSession{ID: id, Node: "n", Incarnation: "i", Nick: fmt.Sprint("user", i), User: "u", Host: "h",
			DID: fmt.Sprint("did:plc:user", i)})
		apply(fsm.EndSession{Session: id})
	}
	for i := range 4096 {
		login(i)
	}
	var x Index
	check := func(i int) {
		m.Read(func(st *fsm.State) {
			if h, ok := x.LookAlike(st, fmt.Sprint("vser", i), nil); ok {
				b.Fatalf("unexpected look-alike %+v", h)
			}
		})
	}
	check(0)
	i := 4096
	for b.Loop() {
		id := fmt.Sprint("s", i)
		apply(fsm.RegisterSession{ID: id, Node: "n", Incarnation: "i", Nick: fmt.Sprint("user", i), User: "u", Host: "h",
			DID: fmt.Sprint("did:plc:user", i)})
		check(i)
		apply(fsm.EndSession{Session: id})
		i++
	}
}
