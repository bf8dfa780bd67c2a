package testcluster

import (
	"testing"
)

func acked(sender, text, msgid string, call int) SentMessage {
	return SentMessage{Sender: sender, Text: text, MsgID: msgid, Call: ms(call), State: Acked}
}

func live(text, msgid string, conn int) Receipt {
	return Receipt{Text: text, MsgID: msgid, Conn: conn}
}

func fromHistory(text, msgid string, conn, query int) Receipt {
	return Receipt{Text: text, MsgID: msgid, Conn: conn, History: query}
}

func receiver(name string, firstJoin int, receipts ...Receipt) ReceiverLog {
	return ReceiverLog{Name: name, Joined: true, FirstJoin: ms(firstJoin), Receipts: receipts}
}

func TestCheckDelivery(t *testing.T) {
	sent := []SentMessage{
		acked("a", "a.1", "M1", 10),
		acked("a", "a.2", "M2", 20),
		acked("b", "b.1", "M3", 30),
		{Sender: "a", Text: "a.3", Call: ms(40), State: SendUnknown},
		{Sender: "b", Text: "b.2", Call: ms(50), State: Refused},
	}
	tests := []struct {
		name             string
		receivers        []ReceiverLog
		owed             int
		lost             []string // receiver:text
		dups             []string // receiver:text@where
		overlaps         int
		refusedDelivered int
		mismatches       int
	}{
		{
			name: "everyone reads everything once, live",
			receivers: []ReceiverLog{
				receiver("a", 0, live("b.1", "M3", 1)),
				receiver("b", 0, live("a.1", "M1", 1), live("a.2", "M2", 1)),
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "M2", 1), live("b.1", "M3", 1)),
			},
			owed: 6,
		},
		{
			name: "a message never read is lost",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("b.1", "M3", 1)),
			},
			owed: 3, lost: []string{"c:a.2"},
		},
		{
			name: "missed live, read from history after a reconnection: not lost",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), fromHistory("a.2", "M2", 2, 1), fromHistory("b.1", "M3", 2, 1)),
			},
			owed: 3,
		},
		{
			name: "messages sent before the first join are not owed",
			receivers: []ReceiverLog{
				receiver("c", 25, live("b.1", "M3", 1)),
			},
			owed: 1,
		},
		{
			name:      "a receiver that never joined is owed nothing",
			receivers: []ReceiverLog{{Name: "c"}},
		},
		{
			name: "unknown and refused messages are not owed",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "M2", 1), live("b.1", "M3", 1), live("a.3", "M4", 1)),
			},
			owed: 3,
		},
		{
			name: "delivered live twice, on one connection",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.1", "M1", 1), live("a.2", "M2", 1), live("b.1", "M3", 1)),
			},
			owed: 3, dups: []string{"c:a.1@live"},
		},
		{
			name: "delivered live again on a later connection",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "M2", 1), live("a.1", "M1", 2), live("b.1", "M3", 2)),
			},
			owed: 3, dups: []string{"c:a.1@live"},
		},
		{
			name: "twice in one history answer",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), fromHistory("a.2", "M2", 2, 1), fromHistory("a.2", "M2", 2, 1), fromHistory("b.1", "M3", 2, 1)),
			},
			owed: 3, dups: []string{"c:a.2@history query 1"},
		},
		{
			name: "read live and again from history: an overlap, not a duplicate",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "M2", 1), fromHistory("a.2", "M2", 2, 1), fromHistory("b.1", "M3", 2, 1), fromHistory("b.1", "M3", 3, 2)),
			},
			owed: 3, overlaps: 2,
		},
		{
			name: "a refused message that was delivered anyway",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "M2", 1), live("b.1", "M3", 1), live("b.2", "M5", 1)),
			},
			owed: 3, refusedDelivered: 1,
		},
		{
			name: "a message delivered under another msgid",
			receivers: []ReceiverLog{
				receiver("c", 0, live("a.1", "M1", 1), live("a.2", "MX", 1), live("b.1", "M3", 1)),
			},
			owed: 3, mismatches: 1,
		},
		{
			name: "own messages are not owed back",
			receivers: []ReceiverLog{
				receiver("a", 0, live("b.1", "M3", 1)),
			},
			owed: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckDelivery(sent, tt.receivers)
			if v.Acked != 3 || v.Unknown != 1 || v.Refused != 1 {
				t.Errorf("acked/unknown/refused = %d/%d/%d, want 3/1/1", v.Acked, v.Unknown, v.Refused)
			}
			if v.Owed != tt.owed {
				t.Errorf("owed = %d, want %d", v.Owed, tt.owed)
			}
			var lost []string
			for _, l := range v.Lost {
				lost = append(lost, l.Receiver+":"+l.Message.Text)
			}
			if !equalStrings(lost, tt.lost) {
				t.Errorf("lost = %v, want %v", lost, tt.lost)
			}
			var dups []string
			for _, d := range v.Duplicates {
				dups = append(dups, d.Receiver+":"+d.Text+"@"+d.Where)
			}
			if !equalStrings(dups, tt.dups) {
				t.Errorf("duplicates = %v, want %v", dups, tt.dups)
			}
			if v.Overlaps != tt.overlaps || v.RefusedDelivered != tt.refusedDelivered || v.MsgIDMismatches != tt.mismatches {
				t.Errorf("overlaps/refused delivered/mismatches = %d/%d/%d, want %d/%d/%d",
					v.Overlaps, v.RefusedDelivered, v.MsgIDMismatches, tt.overlaps, tt.refusedDelivered, tt.mismatches)
			}
		})
	}
}

func TestDeliveryCounts(t *testing.T) {
	v := DeliveryVerdict{
		Lost:       []Loss{{Receiver: "b", Message: SentMessage{Text: "x"}}, {Receiver: "c", Message: SentMessage{Text: "x"}}, {Receiver: "c", Message: SentMessage{Text: "y"}}},
		Duplicates: []Duplicate{{Extra: 1}, {Extra: 2}},
	}
	if v.LostMessages() != 2 || v.DuplicatedCopies() != 3 {
		t.Errorf("lost messages = %d, duplicated copies = %d; want 2 and 3", v.LostMessages(), v.DuplicatedCopies())
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
