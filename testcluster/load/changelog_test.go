package load

import (
	"slices"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

func TestParseChangeKinds(t *testing.T) {
	tests := []struct {
		in      string
		want    []ChangeKind
		wantErr bool
	}{
		{"topic", []ChangeKind{ChangeTopic}, false},
		{"topic, MODE,pin,topic", []ChangeKind{ChangeTopic, ChangeMode, ChangePin}, false},
		{"", nil, true},
		{"topic,kick", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseChangeKinds(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("ParseChangeKinds(%q) = %v, %v; want %v (error %t)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestChangeLogMatchesAnswersAndSightings(t *testing.T) {
	at := time.Now()
	type step struct {
		op  string // record, ack, fail, observe
		key string
		ok  bool // ack's and fail's answer
	}
	tests := []struct {
		name  string
		steps []step
		// per change: acked, failed, lateAck, observations
		want    [][4]any
		unknown int
		pending int
	}{
		{
			name:  "in order",
			steps: []step{{"record", "a", false}, {"record", "b", false}, {"ack", "a", true}, {"observe", "a", false}, {"ack", "b", true}},
			want:  [][4]any{{true, "", false, 1}, {true, "", false, 0}},
		},
		{
			name: "a refusal answers the oldest unanswered change",
			steps: []step{{"record", "a", false}, {"record", "b", false}, {"record", "c", false},
				{"ack", "a", true}, {"fail", "", true}, {"ack", "c", true}, {"fail", "", false}},
			want: [][4]any{{true, "", false, 0}, {false, "FAIL", false, 0}, {true, "", false, 0}},
		},
		{
			name:  "an echo after a refusal marks a late ack",
			steps: []step{{"record", "a", false}, {"fail", "", true}, {"ack", "a", false}, {"observe", "a", false}},
			want:  [][4]any{{true, "FAIL", true, 1}},
		},
		{
			name: "repeated keys match the earliest change lacking the answer",
			steps: []step{{"record", "pin x", false}, {"record", "unpin x", false}, {"record", "pin x", false},
				{"ack", "pin x", true}, {"ack", "unpin x", true}, {"observe", "pin x", false}, {"observe", "pin x", false}},
			want:    [][4]any{{true, "", false, 1}, {true, "", false, 0}, {false, "", false, 1}},
			pending: 1,
		},
		{
			name: "a sighting of a repeated key skips a refused change",
			steps: []step{{"record", "pin x", false}, {"fail", "", true}, {"record", "unpin x", false}, {"fail", "", true},
				{"record", "pin x", false}, {"ack", "pin x", true}, {"observe", "pin x", false}},
			want: [][4]any{{false, "FAIL", false, 0}, {false, "FAIL", false, 0}, {true, "", false, 1}},
		},
		{
			name:  "a refused change seen on the other node committed after all",
			steps: []step{{"record", "topic a", false}, {"fail", "", true}, {"observe", "topic a", false}},
			want:  [][4]any{{false, "FAIL", false, 1}},
		},
		{
			name:    "duplicates and unknown sightings",
			steps:   []step{{"record", "a", false}, {"ack", "a", true}, {"observe", "a", false}, {"observe", "a", false}, {"observe", "zz", false}},
			want:    [][4]any{{true, "", false, 2}},
			unknown: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newChangeLog(4)
			for _, s := range tt.steps {
				switch s.op {
				case "record":
					l.record(ChangeTopic, s.key, false)
				case "ack":
					if got := l.ack(s.key, at); got != s.ok {
						t.Errorf("ack(%q) = %t, want %t", s.key, got, s.ok)
					}
				case "fail":
					if got := l.fail("FAIL", at); got != s.ok {
						t.Errorf("fail = %t, want %t", got, s.ok)
					}
				case "observe":
					l.observe(s.key, at)
				}
			}
			changes, unknown := l.snapshot()
			if len(changes) != len(tt.want) {
				t.Fatalf("%d changes, want %d", len(changes), len(tt.want))
			}
			for i, c := range changes {
				got := [4]any{!c.acked.IsZero(), c.failed, c.lateAck, c.observations}
				if got != tt.want[i] {
					t.Errorf("change %d: acked, failed, late, observations = %v, want %v", i, got, tt.want[i])
				}
			}
			if unknown != tt.unknown || l.pending() != tt.pending {
				t.Errorf("unknown %d pending %d, want %d and %d", unknown, l.pending(), tt.unknown, tt.pending)
			}
		})
	}
}

func TestChangeLogSignalsTheClosingTopic(t *testing.T) {
	l := newChangeLog(1)
	l.record(ChangeTopic, "topic a", false)
	l.record(ChangeTopic, "topic end", true)
	l.observe("topic a", time.Now())
	select {
	case <-l.finalSeen:
		t.Fatal("closed before the closing topic was seen")
	default:
	}
	l.observe("topic end", time.Now())
	<-l.finalSeen
}

func TestChangeKeysOfEchoes(t *testing.T) {
	w := &changeWriter{index: 3, nick: "w1", channel: "#c-ab-3", tag: "ab", kinds: []ChangeKind{ChangeTopic, ChangeMode, ChangePin},
		topic: benchBody("tab-3-", 40), pinIDs: []string{"01M1", "01M2"}}
	// What the server sends back for each line the writer makes.
	echo := func(line string) string {
		m, err := ircmsg.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		switch m.Command {
		case "PIN", "UNPIN":
			tag := "+freeq.at/pin"
			if m.Command == "UNPIN" {
				tag = "+freeq.at/unpin"
			}
			return "@" + tag + "=" + m.Params[1] + " :w1!u@h NOTICE #C-AB-3 :\x01ACTION pinned a message\x01"
		}
		return ":w1!u@h " + line
	}
	seen := map[string]bool{}
	for range 12 {
		line, _, key := w.nextChange()
		m, err := ircmsg.Parse(echo(line))
		if err != nil {
			t.Fatal(err)
		}
		if got := changeKeyOf(m, w.channel); got != key {
			t.Errorf("key of the echo of %q = %q, want %q", line, got, key)
		}
		seen[key] = true
	}
	// 4 topics, 4 modes (2 masks added and removed), 4 pins (2 messages pinned and unpinned).
	if len(seen) != 12 {
		t.Errorf("%d distinct keys in 12 changes, want 12: %v", len(seen), seen)
	}
	other, _ := ircmsg.Parse(":x!u@h TOPIC #elsewhere :t1 x")
	if changeKeyOf(other, w.channel) != "" {
		t.Error("a change to another channel matched")
	}
}

func TestPlaceClients(t *testing.T) {
	tests := []struct {
		p      Placement
		leader int
		n      int
		want   []clientPlace
	}{
		{PlaceAny, 0, 4, []clientPlace{{0, 1}, {1, 2}, {2, 0}, {0, 1}}},
		{PlaceLeader, 1, 2, []clientPlace{{1, 2}, {1, 2}}},
		{PlaceLeader, 2, 1, []clientPlace{{2, 0}}},
		{PlaceFollower, 0, 2, []clientPlace{{1, 2}, {1, 2}}},
		{PlaceFollower, 2, 1, []clientPlace{{0, 1}}},
		{PlaceFollowers, 1, 3, []clientPlace{{0, 2}, {2, 0}, {0, 2}}},
	}
	for _, tt := range tests {
		got, err := placeClients(tt.p, 3, tt.leader, tt.n)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("placeClients(%s, leader %d) = %v, %v; want %v", tt.p, tt.leader, got, err, tt.want)
		}
	}
	if _, err := placeClients(PlaceAny, 1, 0, 1); err == nil {
		t.Error("one node accepted")
	}
	if _, err := ParsePlacement("nowhere"); err == nil {
		t.Error("unknown placement accepted")
	}
}

func TestSettledLeader(t *testing.T) {
	h := func(roles ...string) clusterHealth {
		c := clusterHealth{nodes: make([]NodeHealth, len(roles)), errs: make([]error, len(roles))}
		for i, r := range roles {
			c.nodes[i] = NodeHealth{Role: r, Term: 2}
		}
		return c
	}
	tests := []struct {
		name     string
		health   clusterHealth
		consider []int
		want     int
		ok       bool
	}{
		{"one leader", h("follower", "leader", "follower"), []int{0, 1, 2}, 1, true},
		{"no leader", h("follower", "candidate", "follower"), []int{0, 1, 2}, -1, false},
		{"two leaders", h("leader", "leader", "follower"), []int{0, 1, 2}, -1, false},
		{"a dead node is left out", h("leader", "follower", "leader"), []int{1, 2}, 2, true},
	}
	for _, tt := range tests {
		got, ok := tt.health.settledLeader(tt.consider)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: settledLeader = %d, %t; want %d, %t", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	mixed := h("leader", "follower", "follower")
	mixed.nodes[2].Term = 3
	if _, ok := mixed.settledLeader([]int{0, 1, 2}); ok {
		t.Error("nodes in different terms counted as settled")
	}
}
