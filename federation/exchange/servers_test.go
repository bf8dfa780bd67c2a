package exchange

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
)

const (
	homeDID   = "did:web:home.example"   // the sending node's server
	remoteDID = "did:web:remote.example" // the configured server it streams to
)

// fakeServers is peering as the exchange sees it, on both ends: the sender's routes and Due
// rules (rows of #linked are due), and the receiver's authentication and frame handling, which
// records what it took, each msgid once.
type fakeServers struct {
	routes   []ServerRoute
	keys     map[string]ed25519.PublicKey // the peers' server keys by DID
	readonly map[string]bool
	fail     atomic.Bool  // ReceiveFrame fails (the frame is not durably taken)
	waitOn   atomic.Value // string: a delete of this root waits

	mu       sync.Mutex
	got      map[string]int // msgid, delete root or reaction event id → times taken
	frames   int
	up, down int
	downErrs []error
}

func newFakeServers() *fakeServers {
	f := &fakeServers{keys: map[string]ed25519.PublicKey{}, readonly: map[string]bool{}, got: map[string]int{}}
	f.waitOn.Store("")
	return f
}

func (f *fakeServers) Routes() []ServerRoute { return f.routes }
func (f *fakeServers) DueMessage(_ string, m eventstore.Message) bool {
	return m.Venue == "#linked" && m.Command != "TAGMSG"
}
func (f *fakeServers) DueDeletion(_ string, d eventstore.Deletion) bool { return d.Venue == "#linked" }
func (f *fakeServers) DueReaction(_ string, r eventstore.ReactionEvent) bool {
	return r.Venue == "#linked"
}

func (f *fakeServers) AuthenticateStream(r *http.Request) (string, ed25519.PublicKey, int, error) {
	signer, pub, err := VerifyRequest(r.Header, func(did, kid string) (ed25519.PublicKey, bool) {
		k, ok := f.keys[did]
		return k, ok && signing.KID(k) == kid
	}, r.Method, r.URL.RequestURI(), nil, time.Now())
	if err != nil {
		return "", nil, http.StatusUnauthorized, err
	}
	if f.readonly[signer] {
		return "", nil, http.StatusForbidden, fmt.Errorf("%s is readonly here", signer)
	}
	return signer, pub, 0, nil
}

func (f *fakeServers) ReceiveFrame(_ context.Context, _ string, fr ServerFrame) (Taken, error) {
	if f.fail.Load() {
		return Taken{}, errors.New("store unavailable")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames++
	var t Taken
	for _, e := range fr.Events {
		f.got[e.MsgID]++
		t.Events++
	}
	for _, d := range fr.Deletions {
		if d.RootMsgID == f.waitOn.Load().(string) {
			break
		}
		f.got["delete "+d.RootMsgID]++
		t.Deletions++
	}
	for _, r := range fr.Reactions {
		f.got[r.EventID]++
		t.Reactions++
	}
	return t, nil
}

func (f *fakeServers) StreamUp(string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up++
}

func (f *fakeServers) StreamDown(_ string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down++
	f.downErrs = append(f.downErrs, err)
}

func (f *fakeServers) times(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[id]
}

func (f *fakeServers) counts() (frames, up, down int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames, f.up, f.down
}

// remoteServer is a configured server on its own: the receiving end of streams on a loopback
// HTTP server.
func remoteServer(t *testing.T) (*fakeServers, *httptest.Server) {
	t.Helper()
	recv := newFakeServers()
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.Handle(ServerStreamPath, ServerStreamHandler(ctx, recv, nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { cancel(); srv.CloseClientConnections(); srv.Close() })
	return recv, srv
}

// streamTo has node n stream to the server at url as homeDID (its key known there), and starts
// its server streams.
func streamTo(n *testNode, recv *fakeServers, url string) *fakeServers {
	send := routeTo(n, recv, url)
	n.x.startServerStreams()
	return send
}

// routeTo configures node n to stream to the server at url as homeDID, its key known there.
func routeTo(n *testNode, recv *fakeServers, url string) *fakeServers {
	send := newFakeServers()
	send.routes = []ServerRoute{{DID: remoteDID, StreamURL: url + ServerStreamPath, Client: http.DefaultClient}}
	n.x.cfg.Servers, n.x.cfg.ServerDID = send, homeDID
	if recv != nil {
		recv.keys[homeDID] = n.key.Public().(ed25519.PublicKey)
	}
	return send
}

// sayIn stores a message of n in venue and publishes it.
func (n *testNode) sayIn(t *testing.T, venue, text string) eventstore.Message {
	t.Helper()
	m := &eventstore.Message{MsgID: fmt.Sprintf("m-%s-%d", strings.Trim(venue, "#"), time.Now().UnixNano()), Venue: venue,
		Command: "PRIVMSG", Sender: "a!u@h", SenderNick: "a", Text: text, Time: time.Now(), Origin: Name(n.did)}
	if err := n.store.Append(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	n.x.Publish(*m)
	return *m
}

func outCursor(t *testing.T, n *testNode, l Log) int64 {
	t.Helper()
	c, err := ReadCursor(context.Background(), n.store, serverCursor(remoteDID, l))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServerStreamSendsWhatIsDueOnceAndHoldsItsCursors: the rows due to a server reach it once,
// over frames of at most 100 items; the sender-held cursors move over every row examined, but
// only over frames the server acknowledged; a stream that failed resumes from them with no
// duplicate.
func TestServerStreamSendsWhatIsDueOnceAndHoldsItsCursors(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["did:web:a"]
	recv, srv := remoteServer(t)
	var due []string
	for i := range 250 { // more than one frame's 100 items
		due = append(due, a.sayIn(t, "#linked", fmt.Sprint("linked ", i)).MsgID)
		a.sayIn(t, "#local", fmt.Sprint("local ", i))
	}
	send := streamTo(a, recv, srv.URL)
	last := due[len(due)-1]
	waitFor(t, "every linked row on the server", func() bool { return recv.times(last) == 1 })
	waitFor(t, "the out cursor at the last row", func() bool { return outCursor(t, a, LogMessages) == 500 })
	for _, id := range due {
		if n := recv.times(id); n != 1 {
			t.Fatalf("%s taken %d times", id, n)
		}
	}
	if frames, _, _ := recv.counts(); frames < 3 {
		t.Fatalf("250 rows in %d frames: a frame holds at most 100", frames)
	}
	if _, up, _ := send.counts(); up != 1 {
		t.Fatalf("StreamUp called %d times", up)
	}

	// The server fails to take a frame: nothing moves, and the stream ends.
	recv.fail.Store(true)
	failed := a.sayIn(t, "#linked", "while the server fails")
	waitFor(t, "the stream's end", func() bool { _, _, down := send.counts(); return down >= 1 })
	if got := outCursor(t, a, LogMessages); got != 500 {
		t.Fatalf("the out cursor moved to %d over an unacknowledged frame", got)
	}
	// It heals: the stream reconnects and resumes from the out cursor.
	recv.fail.Store(false)
	a.x.Kick()
	after := a.sayIn(t, "#linked", "after the failure")
	waitFor(t, "the rows after the failure", func() bool { return recv.times(after.MsgID) == 1 })
	waitFor(t, "the out cursor", func() bool { return outCursor(t, a, LogMessages) == after.Seq })
	for _, id := range append(due, failed.MsgID, after.MsgID) {
		if n := recv.times(id); n != 1 {
			t.Fatalf("%s taken %d times", id, n)
		}
	}
}

// TestServerStreamCarriesDeletesAndReactions: deletes and reactions due to a server travel on its
// stream; a delete the server cannot take yet keeps the deletes cursor before it, and is taken
// once the server can.
func TestServerStreamCarriesDeletesAndReactions(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["did:web:a"]
	recv, srv := remoteServer(t)
	streamTo(a, recv, srv.URL)
	m := a.sayIn(t, "#linked", "react, then delete")
	waitFor(t, "the message on the server", func() bool { return recv.times(m.MsgID) == 1 })
	ev := eventstore.ReactionEvent{EventID: "react-1", Origin: "a", Root: m.MsgID, Reactor: "did:plc:r", ReactorNick: "r",
		Emoji: "👍", At: time.Now(), Venue: "#linked", Sender: "r!u@h", Tags: map[string]string{"+draft/react": "👍"}}
	if _, err := a.store.FileReaction(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	a.x.PublishReaction(ev)
	waitFor(t, "the reaction on the server", func() bool { return recv.times("react-1") == 1 })
	waitFor(t, "the reactions cursor", func() bool { return outCursor(t, a, LogReactions) == 1 })

	recv.waitOn.Store(m.MsgID)
	a.deleteOn(t, m.MsgID)
	waitFor(t, "the delete offered", func() bool { f, _, _ := recv.counts(); return f >= 3 })
	if got := outCursor(t, a, LogDeletes); got != 0 {
		t.Fatalf("the deletes cursor moved to %d over a delete the server did not take", got)
	}
	recv.waitOn.Store("")
	a.x.Kick() // as a new delete or the heartbeat would
	waitFor(t, "the delete on the server", func() bool { return recv.times("delete "+m.MsgID) == 1 })
	waitFor(t, "the deletes cursor", func() bool { return outCursor(t, a, LogDeletes) == 1 })
}

// TestServerStreamRefusedStoresNothing: a stream request the server refuses (a signer or key it
// does not know: 401; a readonly server: 403) gets no frame through, and the sender's cursors stay.
func TestServerStreamRefusedStoresNothing(t *testing.T) {
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name  string
		setup func(recv *fakeServers, a *testNode)
		want  int
	}{
		{"unknown signer", func(recv *fakeServers, a *testNode) { delete(recv.keys, homeDID) }, http.StatusUnauthorized},
		{"key not the signer's", func(recv *fakeServers, a *testNode) {
			recv.keys[homeDID] = stranger.Public().(ed25519.PublicKey)
		}, http.StatusUnauthorized},
		{"readonly server", func(recv *fakeServers, a *testNode) { recv.readonly[homeDID] = true }, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "a")
			a := c.nodes["did:web:a"]
			recv, srv := remoteServer(t)
			m := a.sayIn(t, "#linked", "refused")
			send := routeTo(a, recv, srv.URL)
			tc.setup(recv, a)
			a.x.startServerStreams()
			waitFor(t, "a refused stream", func() bool {
				send.mu.Lock()
				defer send.mu.Unlock()
				for _, err := range send.downErrs {
					var ref *RefusedError
					if errors.As(err, &ref) && ref.Status == tc.want {
						return true
					}
				}
				return false
			})
			// The same refusal, dialled by hand.
			_, err := DialServerStream(context.Background(), http.DefaultClient, srv.URL+ServerStreamPath, a.key, homeDID)
			var ref *RefusedError
			if !errors.As(err, &ref) || ref.Status != tc.want {
				t.Fatalf("dial: %v, want status %d", err, tc.want)
			}
			if frames, _, _ := recv.counts(); frames != 0 || recv.times(m.MsgID) != 0 {
				t.Fatalf("the server took %d frames", frames)
			}
			if _, up, _ := send.counts(); up != 0 {
				t.Fatal("StreamUp called for a refused stream")
			}
			if got := outCursor(t, a, LogMessages); got != 0 {
				t.Fatalf("out cursor %d", got)
			}
		})
	}
}

// TestDeadServerDoesNotDelayTheCluster: a configured server that never answers holds only its own
// stream: a's cluster peer gets every message.
func TestDeadServerDoesNotDelayTheCluster(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	hung := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hung:
		}
	}))
	t.Cleanup(func() { close(hung); dead.CloseClientConnections(); dead.Close() })
	streamTo(a, nil, dead.URL)
	var ids []string
	for i := range 300 {
		ids = append(ids, a.sayIn(t, "#linked", fmt.Sprint("m ", i)).MsgID)
	}
	expectAllOnce(t, a, b, ids)
	if got := outCursor(t, a, LogMessages); got != 0 {
		t.Fatalf("out cursor %d for a server that never answered", got)
	}
}

// TestServerStreamLimits: a frame of more than 100 items, or of more than maxServerFrame bytes,
// ends the stream and nothing of it is taken.
func TestServerStreamLimits(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["did:web:a"]
	events := func(n, textBytes int) []Event {
		var out []Event
		for i := range n {
			e := testEvent(int64(i + 1))
			e.Text = strings.Repeat("x", textBytes)
			out = append(out, e)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		frame ServerFrame
		ok    bool
	}{
		{"100 items", ServerFrame{Events: events(98, 10), Deletions: []eventstore.Deletion{testDeletion(1)}, Reactions: []eventstore.ReactionEvent{testReaction(1, false)}}, true},
		{"101 items", ServerFrame{Events: events(99, 10), Deletions: []eventstore.Deletion{testDeletion(1)}, Reactions: []eventstore.ReactionEvent{testReaction(1, false)}}, false},
		{"too many bytes", ServerFrame{Events: events(1, maxServerFrame)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv, srv := remoteServer(t)
			recv.keys[homeDID] = a.key.Public().(ed25519.PublicKey)
			sc, err := DialServerStream(context.Background(), http.DefaultClient, srv.URL+ServerStreamPath, a.key, homeDID)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			taken, err := sc.Send(tc.frame)
			frames, _, _ := recv.counts()
			if tc.ok {
				want := Taken{Events: len(tc.frame.Events), Deletions: 1, Reactions: 1}
				if err != nil || taken != want || frames != 1 {
					t.Fatalf("taken %+v, %v (%d frames), want %+v", taken, err, frames, want)
				}
				return
			}
			if err == nil || frames != 0 {
				t.Fatalf("the server took %d frames (taken %+v, err %v)", frames, taken, err)
			}
		})
	}
}
