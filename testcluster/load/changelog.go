package load

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ChangeKind is a kind of replicated channel change a cluster writer
// makes.
type ChangeKind string

// The change kinds.
const (
	// ChangeTopic sets the channel topic to a text that starts with the
	// change's key.
	ChangeTopic ChangeKind = "topic"
	// ChangeMode adds, then removes, a ban mask that holds the change's
	// number (MODE +b / -b), so every change is a real one and the list
	// never holds more than one entry.
	ChangeMode ChangeKind = "mode"
	// ChangePin pins, then unpins, one of the messages the writer posted
	// before the run (PIN / UNPIN).
	ChangePin ChangeKind = "pin"
)

// ParseChangeKinds parses a comma-separated list of topic, mode and pin.
func ParseChangeKinds(list string) ([]ChangeKind, error) {
	var out []ChangeKind
	seen := map[ChangeKind]bool{}
	for _, s := range strings.Split(list, ",") {
		k := ChangeKind(strings.ToLower(strings.TrimSpace(s)))
		switch k {
		case "":
			continue
		case ChangeTopic, ChangeMode, ChangePin:
		default:
			return nil, fmt.Errorf("load: unknown change kind %q (want topic, mode or pin)", s)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("load: no change kind in %q", list)
	}
	return out, nil
}

// change is one change a writer sent and what became of it.
type change struct {
	kind  ChangeKind
	key   string // what identifies its echo and its observation
	final bool   // the closing topic of the loss check, not measured
	sent  time.Time
	// The writer's answer: its own echo (acked) or a refusal (failed).
	// An echo that comes after a refusal (the change committed anyway)
	// sets lateAck.
	answered bool
	acked    time.Time
	failed   string
	lateAck  bool
	// observed is when the partner on another node first saw it;
	// observations counts every sighting (more than one is a duplicate).
	observed     time.Time
	observations int
}

// changeLog is one writer's record of its changes, shared by the writer,
// its read loop and its partner's read loop. Echoes and observations are
// matched to changes by key; a key may repeat (pins cycle through a few
// messages), so each is matched to the earliest change with that key that
// still lacks it. Refusals carry no key: the server handles one
// connection's commands in order, so a refusal answers the oldest change
// still unanswered.
type changeLog struct {
	mu         sync.Mutex
	changes    []change
	byKey      map[string][]int
	oldest     int // every change before it is answered
	unknown    int // observations of keys never sent
	unanswered int
	finalSeq   int           // -1 until the closing topic is sent
	finalSeen  chan struct{} // closed when the partner observes it
	answers    chan struct{} // one token per answer, for the writer's window
	lastAnswer time.Time
	// observedCount, when set, counts first sightings, for progress.
	observedCount *atomic.Int64
}

func newChangeLog(window int) *changeLog {
	return &changeLog{
		byKey: map[string][]int{}, finalSeq: -1, finalSeen: make(chan struct{}),
		answers: make(chan struct{}, window+1),
	}
}

// record notes a change about to be written and returns its number. The
// send time is taken here, just before the write.
func (l *changeLog) record(kind ChangeKind, key string, final bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := len(l.changes)
	l.changes = append(l.changes, change{kind: kind, key: key, final: final, sent: time.Now()})
	l.byKey[key] = append(l.byKey[key], seq)
	l.unanswered++
	if final {
		l.finalSeq = seq
	}
	return seq
}

// ack matches the writer's own echo of key. It reports whether the echo
// answered a change that was waiting (false for an unknown key or an echo
// after a refusal).
func (l *changeLog) ack(key string, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var late *change
	for _, seq := range l.byKey[key] {
		c := &l.changes[seq]
		if !c.answered {
			c.answered, c.acked = true, at
			l.answered(at)
			return true
		}
		if c.failed != "" && !c.lateAck && late == nil {
			late = c
		}
	}
	if late != nil {
		late.lateAck, late.acked = true, at
	}
	return false
}

// fail answers the oldest unanswered change with a refusal; false when
// none waits.
func (l *changeLog) fail(reason string, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.oldest < len(l.changes) && l.changes[l.oldest].answered {
		l.oldest++
	}
	if l.oldest == len(l.changes) {
		return false
	}
	c := &l.changes[l.oldest]
	c.answered, c.failed = true, reason
	l.answered(at)
	return true
}

// answered counts an answer and hands the writer a window token; the
// caller holds mu.
func (l *changeLog) answered(at time.Time) {
	l.unanswered--
	l.lastAnswer = at
	select {
	case l.answers <- struct{}{}:
	default: // the writer is not waiting for tokens (it stopped)
	}
}

// observe matches a sighting of key by the partner on another node.
func (l *changeLog) observe(key string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seqs, ok := l.byKey[key]
	if !ok {
		l.unknown++
		return
	}
	// The earliest unseen change with this key that was not refused;
	// failing that, the earliest unseen refused one (it committed after
	// all); failing that, the sighting is a duplicate of the last.
	pick, refused := -1, -1
	for _, seq := range seqs {
		c := &l.changes[seq]
		if c.observations > 0 {
			continue
		}
		if c.failed == "" {
			pick = seq
			break
		}
		if refused < 0 {
			refused = seq
		}
	}
	if pick < 0 {
		pick = refused
	}
	if pick < 0 {
		l.changes[seqs[len(seqs)-1]].observations++
		return
	}
	c := &l.changes[pick]
	c.observed, c.observations = at, 1
	if l.observedCount != nil {
		l.observedCount.Add(1)
	}
	if pick == l.finalSeq {
		close(l.finalSeen)
	}
}

// pending is the number of changes still waiting for an answer.
func (l *changeLog) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unanswered
}

// snapshot copies the changes for the final tally.
func (l *changeLog) snapshot() (changes []change, unknown int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]change(nil), l.changes...), l.unknown
}
