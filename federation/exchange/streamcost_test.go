package exchange

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pullLog records the logs each pull a node answered asked for.
type pullLog struct {
	mu    sync.Mutex
	asked []logSet
}

func (l *pullLog) record(r *http.Request) {
	var s logSet
	for param, log := range map[string]Log{"after": LogMessages, "deleted_after": LogDeletes, "reacted_after": LogReactions} {
		v := r.URL.Query().Get(param)
		if param == "after" && v == "" {
			v = "0" // the default: rows from the start
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			s |= logsOf(log)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, s)
}

// since returns the logs asked by the pulls answered after the first n.
func (l *pullLog) since(n int) []logSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]logSet(nil), l.asked[n:]...)
}

func (l *pullLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.asked)
}

// pullEvents asks origin for its events after `after` as peer would, and returns the answer's
// status and how many message rows it carries.
func pullEvents(t *testing.T, peer, origin *testNode, after int64) (int, int) {
	t.Helper()
	path := fmt.Sprintf("/internal/v1/events?after=%d&deleted_after=0&reacted_after=0&limit=500", after)
	req, err := http.NewRequest(http.MethodGet, origin.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign(req.Header, peer.key, peer.did, http.MethodGet, path, nil, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, 0
	}
	var b Batch
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, len(b.Events)
}

// TestPullIsAnsweredWithRowsWhileTheStreamIsOpen: an origin answers a pull with the message rows
// it asks for even while its stream to the puller is open (the puller's end may have died
// silently); after=-1 asks for none.
func TestPullIsAnsweredWithRowsWhileTheStreamIsOpen(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	var ids []string
	for i := range 20 {
		ids = append(ids, a.say(t, fmt.Sprint("m ", i)))
	}
	expectAllOnce(t, a, b, ids)
	waitFor(t, "a's stream to b is open", func() bool { return a.x.streamLive(b.did) })
	for _, tc := range []struct {
		after        int64
		status, rows int
	}{
		{0, http.StatusOK, len(ids)},
		{5, http.StatusOK, len(ids) - 5},
		{-1, http.StatusOK, 0},
		{-2, http.StatusBadRequest, 0},
	} {
		if status, rows := pullEvents(t, b, a, tc.after); status != tc.status || rows != tc.rows {
			t.Errorf("after=%d: status %d with %d rows, want %d with %d", tc.after, status, rows, tc.status, tc.rows)
		}
	}
}

// TestStreamHealth: a stream's receiver counts it healthy while it is open and heard within
// streamReadIdle, and then for the logs it carries only.
func TestStreamHealth(t *testing.T) {
	c := newCluster(t, "a")
	x := c.nodes["did:web:a"].x
	const origin = "did:web:o"
	now := time.Now()
	if got := x.streamedLogs(origin, now); got != 0 {
		t.Fatalf("no stream: %b", got)
	}
	closeMessages := x.streamOpen(origin, LogMessages)
	for _, tc := range []struct {
		name string
		at   time.Time
		want logSet
	}{
		{"just opened", time.Now(), setMessages},
		{"silent for less than streamReadIdle", time.Now().Add(streamReadIdle - time.Second), setMessages},
		{"silent for streamReadIdle", time.Now().Add(streamReadIdle + time.Millisecond), 0},
	} {
		if got := x.streamedLogs(origin, tc.at); got != tc.want {
			t.Errorf("%s: %03b, want %03b", tc.name, got, tc.want)
		}
	}
	closeAll := x.streamOpen(origin, LogMessages, LogDeletes, LogReactions)
	if got := x.streamedLogs(origin, time.Now()); got != allLogs {
		t.Errorf("a stream of every log: %03b", got)
	}
	x.mu.Lock()
	x.inbound[origin].heard = time.Now().Add(-2 * streamReadIdle) // silent for two idle periods
	x.mu.Unlock()
	if got := x.streamedLogs(origin, time.Now()); got != 0 {
		t.Errorf("silent: %03b, want none", got)
	}
	x.heard(origin) // a frame or heartbeat
	if got := x.streamedLogs(origin, time.Now()); got != allLogs {
		t.Errorf("heard again: %03b, want every log", got)
	}
	closeAll()
	closeMessages()
	if got := x.streamedLogs(origin, time.Now()); got != 0 {
		t.Errorf("closed: %03b", got)
	}
}

// started gives every node of c a pull loop ticking every `every`.
func started(c *cluster, every time.Duration) {
	for _, n := range c.nodes {
		n.x.cfg.PullEvery = every
		n.x.Start()
	}
}

// TestNoPullOfWhatAHealthyStreamCarries: with the streams up, several pull intervals pass and no
// pull asks an origin for a log its healthy stream carries (so a cluster whose streams carry
// every log makes no pull request at all while idle).
func TestNoPullOfWhatAHealthyStreamCarries(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	started(c, 20*time.Millisecond)
	// No message was stored: the streams open at start all the same.
	waitFor(t, "b receives a stream from a", func() bool { return b.x.streamedLogs(a.did, time.Now()) != 0 })
	ids := []string{a.say(t, "one"), a.say(t, "two")}
	expectAllOnce(t, a, b, ids)
	carried := b.x.streamedLogs(a.did, time.Now())
	before, rounds := a.pulls.count(), b.x.pullRounds.Load()
	waitFor(t, "ten pull rounds on b", func() bool { return b.x.pullRounds.Load() >= rounds+10 })
	if b.x.streamedLogs(a.did, time.Now()) != carried {
		t.Fatal("the stream from a changed during the test")
	}
	for _, asked := range a.pulls.since(before) {
		if asked&carried != 0 {
			t.Fatalf("b pulled logs %03b from a while its stream carried %03b", asked, carried)
		}
	}
	if carried == allLogs && a.pulls.count() != before {
		t.Fatalf("%d pulls while the stream carried every log", a.pulls.count()-before)
	}
}

// TestPullDeliversWhenTheStreamIsCut: once the receiver's stream from an origin is cut (and
// cannot reopen), the next pull rounds deliver the origin's new messages.
func TestPullDeliversWhenTheStreamIsCut(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	started(c, 20*time.Millisecond)
	expectAllOnce(t, a, b, []string{a.say(t, "before")})
	waitFor(t, "b receives a stream from a", func() bool { return b.x.streamedLogs(a.did, time.Now()) != 0 })
	b.noStream.Store(true)
	b.x.closeStreams()
	waitFor(t, "b's stream from a is down", func() bool { return b.x.streamedLogs(a.did, time.Now()) == 0 })
	var ids []string
	for i := range 30 {
		ids = append(ids, a.say(t, fmt.Sprint("after ", i)))
	}
	expectAllOnce(t, a, b, ids)
}
