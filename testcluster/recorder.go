package testcluster

import (
	"sync"
	"sync/atomic"
	"time"
)

// recorder collects what the workload's clients did and saw. Times are offsets from its start on
// the monotonic clock, so every client shares one time line.
type recorder struct {
	start time.Time

	mu        sync.Mutex
	topicOps  []TopicOp
	echoes    map[string]map[string]time.Duration // channel → topic value → first seen
	sent      []*SentMessage
	receivers []*ReceiverLog
	objectOps map[string][]ObjectOp // by kind: "nick", "mode", "pin"

	// Counters for progress reports.
	topicWrites, topicReads, topicUnknown    atomic.Int64
	msgsSent, msgsAcked, receipts            atomic.Int64
	objectWrites, objectReads, objectUnknown atomic.Int64
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), echoes: map[string]map[string]time.Duration{}, objectOps: map[string][]ObjectOp{}}
}

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) topicOp(op TopicOp) {
	switch {
	case op.Outcome == Unknown:
		r.topicUnknown.Add(1)
	case op.Kind == WriteOp:
		r.topicWrites.Add(1)
	default:
		r.topicReads.Add(1)
	}
	r.mu.Lock()
	r.topicOps = append(r.topicOps, op)
	r.mu.Unlock()
}

// objectOp records a nick, mode or pin operation.
func (r *recorder) objectOp(kind string, op ObjectOp) {
	switch {
	case op.Outcome == Unknown:
		r.objectUnknown.Add(1)
	case op.Kind == WriteOp:
		r.objectWrites.Add(1)
	default:
		r.objectReads.Add(1)
	}
	r.mu.Lock()
	r.objectOps[kind] = append(r.objectOps[kind], op)
	r.mu.Unlock()
}

// objectHistory copies the operations on objects of one kind.
func (r *recorder) objectHistory(kind string) []ObjectOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ObjectOp(nil), r.objectOps[kind]...)
}

// echo records a TOPIC line a client saw.
func (r *recorder) echo(channel, value string, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.echoes[channel]
	if m == nil {
		m = map[string]time.Duration{}
		r.echoes[channel] = m
	}
	if old, ok := m[value]; !ok || at < old {
		m[value] = at
	}
}

func (r *recorder) newSent(m SentMessage) *SentMessage {
	r.msgsSent.Add(1)
	m.State = SendUnknown // until the echo or a refusal settles it
	p := &m
	r.mu.Lock()
	r.sent = append(r.sent, p)
	r.mu.Unlock()
	return p
}

func (r *recorder) settle(m *SentMessage, state SendState, msgid string) {
	if state == Acked {
		r.msgsAcked.Add(1)
	}
	r.mu.Lock()
	m.State, m.MsgID = state, msgid
	r.mu.Unlock()
}

func (r *recorder) newReceiver(name, node string) *ReceiverLog {
	l := &ReceiverLog{Name: name, Node: node}
	r.mu.Lock()
	r.receivers = append(r.receivers, l)
	r.mu.Unlock()
	return l
}

func (r *recorder) joined(l *ReceiverLog, at time.Duration) {
	r.mu.Lock()
	if !l.Joined {
		l.Joined, l.FirstJoin = true, at
	}
	r.mu.Unlock()
}

func (r *recorder) receipt(l *ReceiverLog, rc Receipt) {
	r.receipts.Add(1)
	r.mu.Lock()
	l.Receipts = append(l.Receipts, rc)
	r.mu.Unlock()
}

func (r *recorder) query(l *ReceiverLog, q HistoryQuery) {
	r.mu.Lock()
	l.Queries = append(l.Queries, q)
	r.mu.Unlock()
}

// topicHistory copies the topic operations and echo observations.
func (r *recorder) topicHistory() ([]TopicOp, map[string]map[string]time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := append([]TopicOp(nil), r.topicOps...)
	echoes := make(map[string]map[string]time.Duration, len(r.echoes))
	for ch, m := range r.echoes {
		c := make(map[string]time.Duration, len(m))
		for k, v := range m {
			c[k] = v
		}
		echoes[ch] = c
	}
	return ops, echoes
}

// deliveryHistory copies the messages sent and the receivers' logs.
func (r *recorder) deliveryHistory() ([]SentMessage, []ReceiverLog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent := make([]SentMessage, len(r.sent))
	for i, m := range r.sent {
		sent[i] = *m
	}
	logs := make([]ReceiverLog, len(r.receivers))
	for i, l := range r.receivers {
		logs[i] = *l
		logs[i].Receipts = append([]Receipt(nil), l.Receipts...)
		logs[i].Queries = append([]HistoryQuery(nil), l.Queries...)
	}
	return sent, logs
}
