package testcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// SendState is what a sender learnt about one PRIVMSG.
type SendState int

const (
	// Acked: the sender got its echo-message echo, with a msgid.
	Acked SendState = iota
	// SendUnknown: the connection dropped before the echo; the message may or may not exist.
	SendUnknown
	// Refused: the server answered with an error (404, FAIL): the message was not stored.
	Refused
)

// SentMessage is one PRIVMSG a harness client sent. Texts are unique across the run.
type SentMessage struct {
	Sender string // the logical client (stable across its reconnections)
	Node   string
	Text   string
	MsgID  string // from the echo; empty unless Acked
	Call   time.Duration
	State  SendState
}

// Receipt is one PRIVMSG a receiver read: live, or in the answer to a CHATHISTORY query.
type Receipt struct {
	Text  string
	MsgID string
	Conn  int // the receiver's connection number, from 1
	// History is 0 for a live delivery, else the number (from 1) of the receiver's CHATHISTORY
	// query whose batch carried it.
	History int
}

// HistoryQuery is one CHATHISTORY AFTER query a receiver made after a reconnection.
type HistoryQuery struct {
	N     int    // from 1, as in Receipt.History
	Conn  int    // the connection it was made on
	After string // the reference: "msgid=..." (the last message read) or "timestamp=..."
	At    time.Duration
	Count int // messages in the answer
}

// ReceiverLog is everything one logical receiver (a client that reconnects to the same node
// after that node restarts) read in the channel.
type ReceiverLog struct {
	Name      string
	Node      string
	Joined    bool
	FirstJoin time.Duration // when its first JOIN was acknowledged
	Receipts  []Receipt
	Queries   []HistoryQuery
}

// Loss is an acknowledged message a receiver never read, live or from history.
type Loss struct {
	Receiver string
	Node     string // the receiver's node
	Message  SentMessage
	// Stored says whether the receiver's node has the message in its event store, when the
	// harness could ask (the REST single-message lookup): "yes", "no" or "" (not asked).
	Stored string
	// Why is what the receiver's log says about the loss (see explainLoss).
	Why string
}

// Duplicate is a message a receiver read more than once from one source: live more than once
// (across all its connections: the node delivered a stored message again), or more than once in
// one CHATHISTORY answer.
type Duplicate struct {
	Receiver string
	Text     string
	MsgID    string
	Where    string // "live" or "history query N"
	Extra    int    // copies beyond the first
}

// DeliveryVerdict is the result of CheckDelivery.
type DeliveryVerdict struct {
	Acked, Unknown, Refused int
	Owed                    int // (receiver, acknowledged message) pairs that must be read
	Lost                    []Loss
	Duplicates              []Duplicate
	// Overlaps counts (receiver, message) pairs read both live and from history, or from two
	// history queries: expected around a reconnection (CHATHISTORY AFTER the last msgid read
	// returns messages stored later but ordered by their origin time) and removed by msgid, as
	// IRCv3 clients do. Not an error.
	Overlaps int
	// RefusedDelivered counts messages refused to their sender that someone read anyway.
	RefusedDelivered int
	// MsgIDMismatches counts receipts whose msgid differs from the one the sender was given.
	MsgIDMismatches int
}

// DuplicatedCopies is the number of extra copies over all duplicates.
func (v *DeliveryVerdict) DuplicatedCopies() int {
	n := 0
	for _, d := range v.Duplicates {
		n += d.Extra
	}
	return n
}

// CheckDelivery checks exactly-once delivery: every acknowledged message, sent after a receiver
// first joined, by another client, is read by that receiver at least once (live or from
// history), and no source hands the same message to a receiver twice.
func CheckDelivery(sent []SentMessage, receivers []ReceiverLog) DeliveryVerdict {
	var v DeliveryVerdict
	byText := make(map[string]SentMessage, len(sent))
	for _, m := range sent {
		byText[m.Text] = m
		switch m.State {
		case Acked:
			v.Acked++
		case SendUnknown:
			v.Unknown++
		case Refused:
			v.Refused++
		}
	}
	refusedSeen := map[string]bool{}
	for _, r := range receivers {
		type tally struct {
			live    int
			history map[int]int
		}
		got := map[string]*tally{}
		for _, rc := range r.Receipts {
			t := got[rc.Text]
			if t == nil {
				t = &tally{history: map[int]int{}}
				got[rc.Text] = t
			}
			if rc.History == 0 {
				t.live++
			} else {
				t.history[rc.History]++
			}
			if m, ok := byText[rc.Text]; ok {
				if m.State == Acked && rc.MsgID != m.MsgID {
					v.MsgIDMismatches++
				}
				if m.State == Refused {
					refusedSeen[rc.Text] = true
				}
			}
		}
		texts := make([]string, 0, len(got))
		for text := range got {
			texts = append(texts, text)
		}
		sort.Strings(texts)
		for _, text := range texts {
			t := got[text]
			msgid := byText[text].MsgID
			if t.live > 1 {
				v.Duplicates = append(v.Duplicates, Duplicate{Receiver: r.Name, Text: text, MsgID: msgid, Where: "live", Extra: t.live - 1})
			}
			queries := make([]int, 0, len(t.history))
			for q := range t.history {
				queries = append(queries, q)
			}
			sort.Ints(queries)
			for _, q := range queries {
				if n := t.history[q]; n > 1 {
					v.Duplicates = append(v.Duplicates, Duplicate{Receiver: r.Name, Text: text, MsgID: msgid, Where: fmt.Sprintf("history query %d", q), Extra: n - 1})
				}
			}
			if (t.live > 0 && len(t.history) > 0) || len(t.history) > 1 {
				v.Overlaps++
			}
		}
		if !r.Joined {
			continue
		}
		for _, m := range sent {
			if m.State != Acked || m.Sender == r.Name || m.Call <= r.FirstJoin {
				continue
			}
			v.Owed++
			if got[m.Text] == nil {
				v.Lost = append(v.Lost, Loss{Receiver: r.Name, Node: r.Node, Message: m, Why: explainLoss(m, r)})
			}
		}
	}
	v.RefusedDelivered = len(refusedSeen)
	return v
}

// LostMessages is the number of distinct acknowledged messages some receiver never read.
func (v *DeliveryVerdict) LostMessages() int {
	seen := map[string]bool{}
	for _, l := range v.Lost {
		seen[l.Message.Text] = true
	}
	return len(seen)
}

// explainLoss says where a lost message should have come from. A receiver that kept its
// connection should have had it live. One that reconnected should have found it in the answer to
// its first CHATHISTORY AFTER query made after the message was sent. AFTER msgid= follows the
// order in which the receiver's node stored messages, from the oldest one not yet delivered
// there when the cursor message was stored; a lost message stamped before its cursor points at
// that order (it reached the node after the cursor message but carries an older origin time).
func explainLoss(m SentMessage, r ReceiverLog) string {
	var q *HistoryQuery
	for i := range r.Queries {
		if r.Queries[i].At > m.Call {
			q = &r.Queries[i]
			break
		}
	}
	if q == nil {
		return "not delivered live, and no reconnection (no CHATHISTORY query) after it was sent"
	}
	cursor, ok := strings.CutPrefix(q.After, "msgid=")
	if !ok {
		return fmt.Sprintf("not returned by CHATHISTORY AFTER %s (query %d, %d messages)", q.After, q.N, q.Count)
	}
	mt, err1 := ulid.Parse(m.MsgID)
	ct, err2 := ulid.Parse(cursor)
	if err1 == nil && err2 == nil && ct.Time() > mt.Time() {
		return fmt.Sprintf("ordered before the CHATHISTORY AFTER cursor (query %d: msgid=%s stamped %s, the lost message %s): "+
			"it reached the receiver's node after the cursor message but carries an older origin time",
			q.N, cursor, ulid.Time(ct.Time()).UTC().Format("15:04:05.000"), ulid.Time(mt.Time()).UTC().Format("15:04:05.000"))
	}
	return fmt.Sprintf("not returned by CHATHISTORY AFTER msgid=%s (query %d, %d messages) although stamped after it", cursor, q.N, q.Count)
}
