package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkApplyJoinPart measures one Join and one Part through Apply, decode included, on a
// machine with some population. Entries carry request ids, so the exactly-once memory is in play.
func BenchmarkApplyJoinPart(b *testing.B) {
	m := New(quietLogger())
	m.SetObserver(func(uint64, []Event) {})
	var index uint64
	apply := func(data []byte) Result {
		index++
		return m.Apply(index, data).(Result)
	}
	for i := range 1000 {
		apply(mustEncode(b, reg(fmt.Sprintf("s%d", i), fmt.Sprintf("n%d", i), ""), "", "node-a", 1))
		apply(mustEncode(b, Join{Session: fmt.Sprintf("s%d", i), Channel: "#busy"}, "", "node-a", 1))
	}
	apply(mustEncode(b, reg("bench", "bench", didAlice), "", "node-a", 1))
	const ring = 8192 // distinct request ids, more than the memory holds
	joins, parts := make([][]byte, ring), make([][]byte, ring)
	for i := range ring {
		joins[i] = mustEncode(b, Join{Session: "bench", Channel: "#busy"}, fmt.Sprintf("j%d", i), "node-a", int64(i))
		parts[i] = mustEncode(b, Part{Session: "bench", Channel: "#busy"}, fmt.Sprintf("p%d", i), "node-a", int64(i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Past the ring the ids repeat but have been forgotten, so both still apply.
		if r := apply(joins[i%ring]); r.Code != OK {
			b.Fatalf("join: %v", r.Code)
		}
		if r := apply(parts[i%ring]); r.Code != OK {
			b.Fatalf("part: %v", r.Code)
		}
		i++
	}
}

// populated returns a machine with n sessions spread over 100 channels, three channels each.
func populated(b *testing.B, n int) *Machine {
	m := New(quietLogger())
	var index uint64
	apply := func(cmd Command) {
		index++
		m.Apply(index, mustEncode(b, cmd, fmt.Sprintf("r%d", index), "node-a", int64(index)))
	}
	for i := range n {
		id := fmt.Sprintf("session-%05d", i)
		r := reg(id, fmt.Sprintf("nick%d", i), "")
		if i%2 == 0 {
			r.DID, r.TokenHash = fmt.Sprintf("did:plc:user%05d", i), fmt.Sprintf("token-%05d", i)
		}
		apply(r)
		for k := range 3 {
			apply(Join{Session: id, Channel: fmt.Sprintf("#chan%d", (i+k*37)%100)})
		}
	}
	return m
}

func BenchmarkSnapshot(b *testing.B) {
	m := populated(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		w, err := m.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		n, err := w.WriteTo(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

func BenchmarkRestore(b *testing.B) {
	snap := snapshotBytes(b, populated(b, 10_000))
	m := New(quietLogger())
	b.SetBytes(int64(len(snap)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Restore(bytes.NewReader(snap)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSendPath is the state reads one channel message costs on its way: the channel's
// send rules, the channel and the sender's session and signing key, and the local members to
// deliver to.
func BenchmarkReadSendPath(b *testing.B) {
	m := populated(b, 1000)
	m.SetLocalNode("node-a")
	const did, sender = "did:plc:user00000", "session-00000"
	m.Apply(1_000_000, mustEncode(b, RegisterKey{DID: did, KID: "k1", PublicKey: testKey(1), Source: "local-session"}, "rk", "node-a", 1))
	b.ReportAllocs()
	for b.Loop() {
		m.Read(func(st *State) {
			if v := st.CheckChannelSend("#chan0", sender, false, "PRIVMSG", "hello"); !v.Member {
				b.Fatal("the sender is not a member")
			}
			ch, ok := st.Channel("#chan0")
			if !ok || !ch.IsMember(sender) || ch.Moderated() || ch.Name() != "#chan0" {
				b.Fatal("no channel")
			}
			se, ok := st.Session(sender)
			if !ok || se.DID != did || !se.InChannel("#chan0") {
				b.Fatal("no sender session")
			}
			if k, ok := st.Key(did, "k1"); !ok || !k.Live(1) {
				b.Fatal("no live key")
			}
			n := 0
			for range st.LocalMembers("#chan0") {
				n++
			}
			if n == 0 {
				b.Fatal("no local members")
			}
		})
	}
}
