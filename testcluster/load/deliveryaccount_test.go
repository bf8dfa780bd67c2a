package load

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// testFlowClient is a member connection with no network behind it.
func testFlowClient(ch *flowChannel, index int, joinedAt int64, prev *flowClient) *flowClient {
	words := (len(ch.sentAt) + 63) / 64
	c := &flowClient{index: index, ch: ch, joinedAt: joinedAt, prev: prev, trackIDs: true,
		seen: make([]uint64, words), hist: make([]uint64, words), recvAt: make([]int64, len(ch.sentAt))}
	c.alive.Store(true)
	return c
}

// sendTest records message seq as sent by sender at sentAt and acked.
func sendTest(ch *flowChannel, seq, sender int, sentAt int64) {
	ch.senders[seq] = int32(sender)
	ch.sentAt[seq].Store(sentAt)
	ch.ackedAt[seq].Store(sentAt + 1)
}

func TestRecordClassifiesReceipts(t *testing.T) {
	type receipt struct {
		seq     int
		history bool
	}
	tests := []struct {
		name     string
		joinedAt int64
		receipts []receipt
		want     [5]int64 // delivered, early, dups, overlap, fromHist
	}{
		{"live once", 50, []receipt{{1, false}}, [5]int64{1, 0, 0, 0, 0}},
		{"live twice is a duplicate", 50, []receipt{{1, false}, {1, false}}, [5]int64{1, 0, 1, 0, 0}},
		{"history then live overlaps", 50, []receipt{{1, true}, {1, false}}, [5]int64{0, 0, 0, 1, 1}},
		{"live then history overlaps", 50, []receipt{{1, false}, {1, true}}, [5]int64{1, 0, 0, 1, 0}},
		{"sent before the join is early", 150, []receipt{{1, false}}, [5]int64{0, 1, 0, 0, 0}},
		{"during the join is early", 0, []receipt{{1, false}}, [5]int64{0, 1, 0, 0, 0}},
		{"history only", 50, []receipt{{2, true}}, [5]int64{0, 0, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := newFlowChannel(0, "#c", 8)
			sendTest(ch, 1, 9, 100)
			sendTest(ch, 2, 9, 200)
			c := testFlowClient(ch, 1, tt.joinedAt, nil)
			for i, r := range tt.receipts {
				c.record(flowText(32)(r.seq), int64(1000+i), r.history, "ID"+string(rune('A'+r.seq)))
			}
			got := [5]int64{c.delivered, c.early, c.dups, c.overlap, c.fromHist}
			if got != tt.want {
				t.Errorf("delivered, early, dups, overlap, from history = %v, want %v", got, tt.want)
			}
			if !c.has(tt.receipts[0].seq) {
				t.Errorf("has(%d) = false", tt.receipts[0].seq)
			}
			if ch.msgID(tt.receipts[0].seq) == "" {
				t.Error("msgid not noted")
			}
		})
	}
}

func TestRecordCountsOwnEchoOnce(t *testing.T) {
	ch := newFlowChannel(0, "#c", 8)
	ch.senders[1] = 1
	ch.sentAt[1].Store(100)
	c := testFlowClient(ch, 1, 50, nil)
	c.record(flowText(32)(1), 150, true, "X") // its own message in a history page is no echo
	if c.acked != 0 || ch.ackedAt[1].Load() != 0 {
		t.Fatalf("history counted as the echo")
	}
	c.record(flowText(32)(1), 160, false, "X")
	c.record(flowText(32)(1), 170, false, "X")
	if c.acked != 1 || ch.ackedAt[1].Load() != 160 || c.dups != 0 {
		t.Fatalf("acked %d at %d, dups %d", c.acked, ch.ackedAt[1].Load(), c.dups)
	}
}

// TestUserAccounting checks B14's per-user accounting: a reconnected user
// is owed what was sent while it was away, which its catch-up from
// history may deliver; a message it never got is lost, one it got live on
// both connections a duplicate.
func TestUserAccounting(t *testing.T) {
	ch := newFlowChannel(0, "#c", 16)
	for seq, at := range []int64{5, 100, 200, 300, 400, 500} {
		sendTest(ch, seq, 99, at)
	}
	first := testFlowClient(ch, 1, 50, nil)
	first.endedAt.Store(250)
	first.alive.Store(false)
	second := testFlowClient(ch, 2, 350, first)
	steady := testFlowClient(ch, 3, 10, nil)
	ch.members = []*flowClient{second, steady}

	first.record(flowText(32)(1), 110, false, "M1")  // live before the kill
	first.record(flowText(32)(2), 210, false, "M2")  // live before the kill
	second.record(flowText(32)(2), 360, false, "M2") // old message live again on the new connection
	second.record(flowText(32)(3), 370, true, "M3")  // sent while away: from history
	second.record(flowText(32)(5), 510, false, "M5") // live; message 4 never arrives
	for seq := 1; seq <= 5; seq++ {
		steady.record(flowText(32)(seq), ch.sentAt[seq].Load()+5, false, "")
	}

	users := deliveryUsers([]*flowChannel{ch})
	if len(users) != 2 || len(users[0].conns) != 2 {
		t.Fatalf("users %+v", users)
	}
	owed, delivered := userDeliveries(users)
	// Message 0 was sent before either user joined; 1–5 are owed to both.
	if owed != 10 || delivered != 9 {
		t.Fatalf("owed %d delivered %d, want 10 and 9", owed, delivered)
	}
	tl := deliveryTimeline{killedAt: 240, restartedAt: 320, names: []string{"a", "b"}, killed: 1, byIndex: map[int]*flowClient{}}
	d, across := buildDeliveryDetails(users, tl)
	if across != 1 {
		t.Errorf("duplicates across connections = %d, want 1", across)
	}
	if d.owed != owed || d.delivered != delivered {
		t.Errorf("details counted owed %d delivered %d, the accounting %d and %d", d.owed, d.delivered, owed, delivered)
	}
	if len(d.Lost) != 1 || d.Lost[0].Seq != 4 || !strings.Contains(d.Lost[0].Class, "member reconnected") ||
		!strings.Contains(d.Lost[0].Class, "after the restart") {
		t.Errorf("lost %+v", d.Lost)
	}
	if len(d.Lost) == 1 && (len(d.Lost[0].Connections) != 2 || d.Lost[0].Connections[0].EndedMS == 0) {
		t.Errorf("lost record connections %+v", d.Lost[0].Connections)
	}
	if len(d.Late) != 1 || d.Late[0].Seq != 2 {
		t.Errorf("late %+v", d.Late)
	}
}

func TestMemberStateAt(t *testing.T) {
	ch := newFlowChannel(0, "#c", 4)
	first := testFlowClient(ch, 1, 100, nil)
	first.endedAt.Store(200)
	second := testFlowClient(ch, 2, 300, first)
	u := deliveryUser{ch: ch, conns: []*flowClient{first, second}}
	for _, tt := range []struct {
		at   int64
		want string
	}{{150, "connected"}, {250, "disconnected"}, {350, "reconnected"}, {50, "disconnected"}} {
		if got := memberStateAt(u, tt.at); got != tt.want {
			t.Errorf("memberStateAt(%d) = %q, want %q", tt.at, got, tt.want)
		}
	}
}

func TestHistoryFetchPages(t *testing.T) {
	f := newHistoryFetch("#c")
	f.limit = 2
	if got := f.firstRequest("", 0); !strings.HasPrefix(got, "CHATHISTORY AFTER #c timestamp=1970-01-01T00:00:00.000Z 2") {
		t.Fatalf("first request %q", got)
	}
	if got := f.firstRequest("ID0", 0); got != "CHATHISTORY AFTER #c msgid=ID0 2" {
		t.Fatalf("first request %q", got)
	}
	batch := func(line string) string {
		m, err := ircmsg.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		return f.batchLine(m, 7)
	}
	batch(":srv BATCH +b1 chathistory #c")
	f.noteMessage("b1", "ID1")
	f.noteMessage("other", "IDX")
	f.noteMessage("b1", "ID2")
	if next := batch(":srv BATCH -b1"); next != "CHATHISTORY AFTER #c msgid=ID2 2" {
		t.Fatalf("after a full page: %q", next)
	}
	if f.finished() {
		t.Fatal("finished after a full page")
	}
	batch(":srv BATCH +b2 chathistory #c")
	f.noteMessage("b2", "ID3")
	if next := batch(":srv BATCH -b2"); next != "" || !f.finished() {
		t.Fatalf("after a short page: %q, finished %t", next, f.finished())
	}
	if pages, doneAt, failed := f.summary(); pages != 2 || doneAt != 7 || failed {
		t.Fatalf("summary %d %d %t", pages, doneAt, failed)
	}
}

func TestTagValue(t *testing.T) {
	tests := []struct{ line, key, want string }{
		{"@msgid=01A;time=x :n PRIVMSG #c :hi", "msgid", "01A"},
		{"@time=x;batch=b7;msgid=01B :n PRIVMSG #c :hi", "batch", "b7"},
		{"@time=x :n PRIVMSG #c :msgid=no", "msgid", ""},
		{":n PRIVMSG #c :hi", "msgid", ""},
		{"@+draft/reply=1;msgid=Z :n PRIVMSG #c :x", "msgid", "Z"},
		{"@msgid", "msgid", ""},
	}
	for _, tt := range tests {
		if got := tagValue(tt.line, tt.key); got != tt.want {
			t.Errorf("tagValue(%q, %q) = %q, want %q", tt.line, tt.key, got, tt.want)
		}
	}
}

func FuzzTagValue(f *testing.F) {
	f.Add("@msgid=01A;batch=b :n PRIVMSG #c :hi", "msgid")
	f.Add("@;;=;a= x", "a")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, line, key string) {
		v := tagValue(line, key)
		if v != "" && !strings.Contains(line, key+"="+v) {
			t.Fatalf("tagValue(%q, %q) = %q, not in the line", line, key, v)
		}
	})
}

// TestEchoesPendingHoldsTheDrain: a message is owed only once its echo is
// read, so a drain that ended while an echo was outstanding would count
// that message's deliveries still in flight as lost. echoesPending keeps
// the drain open for every message sent on an open connection and not yet
// echoed.
func TestEchoesPendingHoldsTheDrain(t *testing.T) {
	tests := []struct {
		name         string
		sentAt       int64
		echoed       bool
		senderClosed bool
		want         int
	}{
		{"echoed", 100, true, false, 0},
		{"echo outstanding", 100, false, false, 1},
		{"sender's connection ended", 100, false, true, 0},
		{"write failed", -1, false, false, 0},
		{"never sent", 0, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := newFlowChannel(0, "#c", 4)
			sender := testFlowClient(ch, 9, 0, nil)
			member := testFlowClient(ch, 1, 50, nil)
			if tt.senderClosed {
				sender.alive.Store(false)
			}
			ch.senders[0] = 9
			ch.sentAt[0].Store(tt.sentAt)
			if tt.echoed {
				ch.ackedAt[0].Store(tt.sentAt + 1)
			}
			if got := echoesPending([]*flowChannel{ch}, []*flowClient{sender, member}); got != tt.want {
				t.Fatalf("echoesPending = %d, want %d", got, tt.want)
			}
		})
	}

	// What the drain would have missed: before the echo nothing is owed,
	// after it the member is owed the message it has not received yet.
	ch := newFlowChannel(0, "#c", 4)
	sender := testFlowClient(ch, 9, 0, nil)
	member := testFlowClient(ch, 1, 50, nil)
	ch.mu.Lock()
	ch.members = []*flowClient{sender, member}
	ch.mu.Unlock()
	ch.senders[0] = 9
	ch.sentAt[0].Store(100)
	users := deliveryUsers([]*flowChannel{ch})
	if o, d := userDeliveries(users); o != 0 || d != 0 {
		t.Fatalf("before the echo: owed %d delivered %d, want 0 0", o, d)
	}
	ch.ackedAt[0].Store(101)
	if o, d := userDeliveries(users); o != 1 || d != 0 {
		t.Fatalf("after the echo: owed %d delivered %d, want 1 0", o, d)
	}
}
