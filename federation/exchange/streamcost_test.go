package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// pullEvents asks origin for its events after `after` as peer would, and returns how many
// message rows the answer carries.
func pullEvents(t *testing.T, peer, origin *testNode, after int64) int {
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
		t.Fatalf("pull answered %d: %s", resp.StatusCode, body)
	}
	var b Batch
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return len(b.Events)
}

// TestPullCarriesNoMessagesWhileTheStreamIsOpen: an origin whose stream to a peer is open answers
// that peer's pull without message rows (the stream sends them); once the stream is down, the pull
// carries them again, and the peer catches up through it.
func TestPullCarriesNoMessagesWhileTheStreamIsOpen(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	var ids []string
	for i := range 20 {
		ids = append(ids, a.say(t, fmt.Sprint("m ", i)))
	}
	expectAllOnce(t, a, b, ids)
	waitFor(t, "a's stream to b is open", func() bool { return a.x.streamLive(b.did) })
	if n := pullEvents(t, b, a, 0); n != 0 {
		t.Fatalf("with the stream open the pull carried %d messages, want 0", n)
	}

	b.down.Store(true) // b refuses the stream's handshake from now on
	b.x.closeStreams()
	waitFor(t, "a's stream to b is down", func() bool { return !a.x.streamLive(b.did) })
	if n := pullEvents(t, b, a, 0); n != len(ids) {
		t.Fatalf("with the stream down the pull carried %d messages, want %d", n, len(ids))
	}
	var missed []string
	for i := range 30 {
		missed = append(missed, a.say(t, fmt.Sprint("missed ", i)))
	}
	b.x.PullAll(context.Background())
	for _, id := range append(ids, missed...) {
		if got := b.count(id); got != 1 {
			t.Fatalf("%s delivered %d times on b, want 1", id, got)
		}
	}
}
