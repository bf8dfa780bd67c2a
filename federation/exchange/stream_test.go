package exchange

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	dto "github.com/prometheus/client_model/go"

	"github.com/palaver-chat/palaver/node/limits"
)

// TestStreamDeliversExactlyOnceAndMovesTheCursor: with the pull loop idle, the stream alone
// carries more than one frame's worth of messages, each delivered once, and the receiver's cursor
// reaches the origin's last row.
func TestStreamDeliversExactlyOnceAndMovesTheCursor(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	var ids []string
	for i := range 1200 { // more than one frame (PageSize 500)
		ids = append(ids, a.say(t, fmt.Sprint("m ", i)))
	}
	expectAllOnce(t, a, b, ids)
}

// TestStreamResumesFromTheCursorAfterTheLinkIsCut: streams cut again and again while the origin
// keeps storing lose nothing and deliver nothing twice.
func TestStreamResumesFromTheCursorAfterTheLinkIsCut(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	var ids []string
	for round := range 5 {
		for i := range 200 {
			ids = append(ids, a.say(t, fmt.Sprint(round, " ", i)))
		}
		b.x.closeStreams() // the receiver's end of every stream
	}
	expectAllOnce(t, a, b, ids)
}

// TestSlowPeerDoesNotDelayTheOthers: a peer that never answers the stream's handshake holds its
// own stream only.
func TestSlowPeerDoesNotDelayTheOthers(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a, b, cc := c.nodes["did:web:a"], c.nodes["did:web:b"], c.nodes["did:web:c"]
	b.hang.Store(true)
	var ids []string
	for i := range 300 {
		ids = append(ids, a.say(t, fmt.Sprint("m ", i)))
	}
	waitFor(t, "c has every message", func() bool { return cc.count(ids[len(ids)-1]) == 1 })
	for _, id := range ids {
		if cc.count(id) != 1 || b.count(id) != 0 {
			t.Fatalf("%s: c %d, b %d", id, cc.count(id), b.count(id))
		}
	}
	b.hang.Store(false)
	b.x.PullAll(context.Background()) // the pull catches b up, whatever its stream does
	for _, id := range ids {
		if got := b.count(id); got != 1 {
			t.Fatalf("%s delivered %d times on b, want 1", id, got)
		}
	}
}

// rawStream opens a stream from node from to node to by hand.
func rawStream(t *testing.T, from, to *testNode) (io.ReadWriteCloser, int64, string) {
	t.Helper()
	conn, pos, nonce, err := from.x.dialStream(context.Background(), Peer{DID: to.did, BaseURL: to.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, pos.msgs, nonce
}

// writeFrame sends one frame signed with key.
func writeFrame(t *testing.T, w io.Writer, key ed25519.PrivateKey, nonce string, body []byte) {
	t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)+ed25519.SignatureSize))
	frame = append(frame, body...)
	frame = append(frame, ed25519.Sign(key, frameSigningInput(nonce, body))...)
	if _, err := w.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// readAck reads the receiver's answer to a frame (its messages position), or fails when the
// stream was ended instead.
func readAck(r io.Reader) (int64, error) {
	p, err := readAcks(r)
	return p.msgs, err
}

// readAcks reads the receiver's three positions.
func readAcks(r io.Reader) (positions, error) {
	var ack [ackSize]byte
	if _, err := io.ReadFull(r, ack[:]); err != nil {
		return positions{}, err
	}
	return positionsOf(ack), nil
}

func testEvent(seq int64) Event {
	return Event{OriginSeq: seq, MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: fmt.Sprint("row ", seq), TimeMS: time.Now().UnixMilli()}
}

// TestStreamFrames: what a receiver does with each kind of frame: stores and acknowledges good
// ones, moves its cursor only over rows it holds all of, and ends the stream on anything else
// without storing it.
func TestStreamFrames(t *testing.T) {
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name       string
		batch      func(cursor int64) []byte
		forged     bool
		wantStored int64
		wantCursor func(cursor int64) int64 // nil: the stream is ended
		wantDead   []string                 // reasons of the dead letters recorded
	}{
		{"contiguous rows", func(cur int64) []byte {
			return appendBatch(nil, streamBatch{After: cur, Last: cur + 3, Events: []Event{testEvent(cur + 1), testEvent(cur + 3)}})
		}, false, 2, func(cur int64) int64 { return cur + 3 }, nil},
		{"rows after a gap are stored, the cursor stays", func(cur int64) []byte {
			return appendBatch(nil, streamBatch{After: cur + 10, Last: cur + 12, Events: []Event{testEvent(cur + 11)}})
		}, false, 1, func(cur int64) int64 { return cur }, nil},
		{"heartbeat", func(cur int64) []byte { return appendBatch(nil, streamBatch{After: cur, Last: cur}) },
			false, 0, func(cur int64) int64 { return cur }, nil},
		{"signed by another key", func(cur int64) []byte {
			return appendBatch(nil, streamBatch{After: cur, Last: cur + 1, Events: []Event{testEvent(cur + 1)}})
		}, true, 0, nil, nil},
		{"malformed batch", func(cur int64) []byte { return []byte{frameVersion, 0, 1, 9, 9} }, false, 0, nil, nil},
		// An event the receiver cannot accept is a dead letter: recorded, passed over, and the
		// rows after it stored.
		{"invalid event", func(cur int64) []byte {
			e := testEvent(cur + 1)
			e.Command = "KICK"
			return appendBatch(nil, streamBatch{After: cur, Last: cur + 2, Events: []Event{e, testEvent(cur + 2)}})
		}, false, 1, func(cur int64) int64 { return cur + 2 }, []string{ReasonMalformed}},
		{"oversize event", func(cur int64) []byte {
			e := testEvent(cur + 1)
			e.Text = strings.Repeat("x", limits.TextBytes+1)
			return appendBatch(nil, streamBatch{After: cur, Last: cur + 2, Events: []Event{e, testEvent(cur + 2)}})
		}, false, 1, func(cur int64) int64 { return cur + 2 }, []string{ReasonOversize}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "a", "b")
			a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
			conn, cursor, nonce := rawStream(t, a, b)
			key := a.key
			if tc.forged {
				key = stranger
			}
			writeFrame(t, conn, key, nonce, tc.batch(cursor))
			ack, err := readAck(conn)
			stored, _ := b.store.Count(context.Background())
			if stored != tc.wantStored {
				t.Fatalf("stored %d rows, want %d", stored, tc.wantStored)
			}
			dead, _ := b.store.DeadLetters(context.Background(), "", 10)
			if len(dead) != len(tc.wantDead) {
				t.Fatalf("dead letters %+v, want %v", dead, tc.wantDead)
			}
			for i, d := range dead {
				if d.Reason != tc.wantDead[i] || d.Peer != "did:web:a" || d.Origin != "a" || d.Log != string(LogMessages) || d.Seq != cursor+1 {
					t.Fatalf("dead letter %+v, want reason %s for seq %d from did:web:a", d, tc.wantDead[i], cursor+1)
				}
			}
			if got := deadLettersCounted(b.x, "did:web:a", ReasonOversize) + deadLettersCounted(b.x, "did:web:a", ReasonMalformed); int(got) != len(tc.wantDead) {
				t.Fatalf("palaver_exchange_dead_letters_total: %v, want %d", got, len(tc.wantDead))
			}
			cur, _ := ReadCursor(context.Background(), b.store, inCursor("a", LogMessages))
			if tc.wantCursor == nil {
				if err == nil {
					t.Fatalf("the stream went on (ack %d)", ack)
				}
				if cur != cursor {
					t.Fatalf("cursor moved to %d", cur)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.wantCursor(cursor)
			if ack != want {
				t.Fatalf("ack %d, want %d", ack, want)
			}
			// The cursor is written once the stream pauses.
			waitFor(t, "the cursor", func() bool {
				cur, _ = ReadCursor(context.Background(), b.store, inCursor("a", LogMessages))
				return cur >= want
			})
			if cur != want {
				t.Fatalf("cursor %d, want %d", cur, want)
			}
		})
	}
}

// TestStreamHandshakeIsAuthenticated: a stream is opened only by the node at the other end of the
// connection, with a signature of its own, asking for the stream protocol.
func TestStreamHandshakeIsAuthenticated(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name    string
		key     ed25519.PrivateKey
		did     string
		tlsPeer string
		upgrade string
		want    int
	}{
		{"unsigned", nil, "", "", streamProtocol, http.StatusUnauthorized},
		{"signed by a stranger", stranger, "did:web:evil", "", streamProtocol, http.StatusUnauthorized},
		{"over another node's connection", a.key, a.did, b.did, streamProtocol, http.StatusForbidden},
		{"over no node's connection", a.key, a.did, "none", streamProtocol, http.StatusForbidden},
		{"without the upgrade", a.key, a.did, "", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, b.srv.URL+streamPath, nil)
			if tc.upgrade != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tc.upgrade)
			}
			if tc.key != nil {
				sign(req.Header, tc.key, tc.did, http.MethodGet, streamPath, nil, time.Now())
			}
			if tc.tlsPeer != "" {
				req.Header.Set("Test-Tls-Peer", tc.tlsPeer)
			}
			if got := statusOf(t, req); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}

// expectAllOnce waits until to's cursor for from reaches from's last row, and checks that each of
// ids was delivered on to exactly once.
func expectAllOnce(t *testing.T, from, to *testNode, ids []string) {
	t.Helper()
	last, _ := from.store.Count(context.Background())
	waitFor(t, to.did+"'s cursor at the last row", func() bool {
		cur, _ := ReadCursor(context.Background(), to.store, inCursor(Name(from.did), LogMessages))
		return cur == last
	})
	for _, id := range ids {
		if got := to.count(id); got != 1 {
			t.Fatalf("%s delivered %d times, want 1", id, got)
		}
	}
}

// deadLettersCounted reads palaver_exchange_dead_letters_total{peer,reason} of x.
func deadLettersCounted(x *Exchange, peer, reason string) float64 {
	var m dto.Metric
	if err := x.deadLetters.WithLabelValues(peer, reason).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
