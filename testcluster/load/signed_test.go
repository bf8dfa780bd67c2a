package load

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

func TestSignedScenariosAgainstANode(t *testing.T) {
	n := nodetest.Start(t, nil)
	target := Target{IRCAddr: n.IRCAddr(), HTTPURL: "http://" + n.HTTPAddr()}

	t.Run("B6", func(t *testing.T) {
		var progress strings.Builder
		res, err := RunSignedMessages(testContext(t), target, SignedMessagesConfig{
			Channels: 2, ChannelSize: 3, Window: 4, Duration: 300 * time.Millisecond, SetupConcurrency: 4,
			Progress: &progress,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted == 0 || res.Accepted != res.Sent || res.Rejected != 0 || res.Unanswered != 0 || len(res.StreamErrors) != 0 {
			t.Fatalf("sent %d accepted %d rejected %d (%s %q) unanswered %d, errors %q",
				res.Sent, res.Accepted, res.Rejected, res.RejectionKinds(), res.FirstRejections, res.Unanswered, res.StreamErrors)
		}
		if res.Readers != 4 || res.ReadersSynced != 4 || res.Expected != int64(2*res.Accepted) || res.Delivered != res.Expected {
			t.Errorf("readers %d synced %d, delivered %d of %d (accepted %d)", res.Readers, res.ReadersSynced, res.Delivered, res.Expected, res.Accepted)
		}
		if res.Latency.Count != res.Accepted || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 {
			t.Errorf("latency %+v for %d accepted", res.Latency, res.Accepted)
		}
		if res.AcceptedPerSecond <= 0 || res.SigningTime <= 0 || res.ClientCPU <= 0 {
			t.Errorf("%.0f/s, signing %s, client CPU %s", res.AcceptedPerSecond, res.SigningTime, res.ClientCPU)
		}
		if !strings.Contains(progress.String(), "delivered") {
			t.Errorf("no final progress line in %q", progress.String())
		}
		if run := res.Run(); len(run.Notes) != 0 || run.Measurements[0].Value != res.AcceptedPerSecond {
			t.Errorf("report run %+v", run)
		}
	})

	t.Run("B7", func(t *testing.T) {
		res, err := RunVerifyLoad(testContext(t), target, VerifyLoadConfig{
			Messages: 20, Concurrency: 4, Duration: 200 * time.Millisecond, Window: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Seeded != 20 || res.Requests == 0 || res.OK != res.Requests || res.Non200 != 0 || res.NotValid != 0 || res.Errors != 0 {
			t.Fatalf("seeded %d, %d requests, %d ok, %d non-200, %d not valid, %d errors: %q",
				res.Seeded, res.Requests, res.OK, res.Non200, res.NotValid, res.Errors, res.FirstFails)
		}
		if res.Latency.Count != res.Requests || res.RequestsPerSecond <= 0 {
			t.Errorf("latency %+v, %.0f/s", res.Latency, res.RequestsPerSecond)
		}
		if run := res.Run(); len(run.Notes) != 0 {
			t.Errorf("notes %q", run.Notes)
		}
	})

	t.Run("B7 without an HTTP URL", func(t *testing.T) {
		if _, err := RunVerifyLoad(testContext(t), Target{IRCAddr: n.IRCAddr()}, VerifyLoadConfig{Messages: 1}); err == nil {
			t.Error("accepted a target without an HTTP URL")
		}
	})

	// A sender whose signatures were made with a key other than the one it
	// registered has every message refused with FAIL SIGNATURE_INVALID.
	t.Run("bad signatures are counted as refused", func(t *testing.T) {
		ctx := testContext(t)
		d, err := newDialer(target)
		if err != nil {
			t.Fatal(err)
		}
		signers, err := GenerateSigners(CurveEd25519, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := setupSigningSender(ctx, d, &identity{signer: signers[0], did: signers[0].DID()}, "badsig", "#badsig", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer s.conn.close()
		_, s.key.priv, _ = ed25519.GenerateKey(rand.Reader)
		res := s.stream(ctx, streamOptions{window: 3, limit: 7, timeout: 10 * time.Second, body: benchBody("bad ", 50)})
		if res.err != nil || res.sent != 7 || res.accepted != 0 || res.rejections["FAIL SIGNATURE_INVALID"] != 7 || res.unanswered != 0 {
			t.Errorf("sent %d accepted %d rejections %v unanswered %d err %v", res.sent, res.accepted, res.rejections, res.unanswered, res.err)
		}
		if len(res.firstRejections) == 0 || !strings.Contains(res.firstRejections[0], "SIGNATURE_INVALID") {
			t.Errorf("first rejections %q", res.firstRejections)
		}
	})
}

// TestStreamStallsOnASilentServer sends to a peer that reads everything and
// answers nothing: the watchdog ends the stream and every message counts as
// unanswered.
func TestStreamStallsOnASilentServer(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		sc := bufio.NewScanner(server)
		for sc.Scan() {
		}
	}()
	key, err := newSessionKey("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
	if err != nil {
		t.Fatal(err)
	}
	venue, _ := signing.ChannelVenue("#silent")
	s := &signingSender{conn: &tcpLineConn{conn: client, r: bufio.NewReader(client)}, key: key, channel: "#silent", venue: venue}
	res := s.stream(testContext(t), streamOptions{window: 5, limit: 20, timeout: 200 * time.Millisecond, body: benchBody("s ", 20)})
	if !errors.Is(res.err, errStalled) || res.sent != 5 || res.unanswered != 5 || res.accepted != 0 {
		t.Errorf("sent %d unanswered %d accepted %d err %v; want 5 sent, 5 unanswered and a stall", res.sent, res.unanswered, res.accepted, res.err)
	}
}

func TestSignedPrivmsgVerifies(t *testing.T) {
	key, err := newSessionKey("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
	if err != nil {
		t.Fatal(err)
	}
	venue, _ := signing.ChannelVenue("#Room")
	text := "hello there"
	msgid, sig, line, err := key.signedPrivmsg("#Room", venue, text, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := "@+freeq.at/eventid=" + msgid + ";+freeq.at/sig=" + sig + " PRIVMSG #Room :" + text
	if line != want {
		t.Errorf("line %q, want %q", line, want)
	}
	canonical, err := signing.Message{Envelope: signing.Envelope{From: key.did, MsgID: msgid, Venue: venue}, Body: text}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	verdict, reason := signing.Verify(canonical, sig, func(kid string) (ed25519.PublicKey, bool) { return key.pub, kid == key.kid })
	if verdict != signing.Valid {
		t.Errorf("verdict %v (%s)", verdict, reason)
	}
	next, _, _, err := key.signedPrivmsg("#Room", venue, text, time.Now())
	if err != nil || next <= msgid {
		t.Errorf("next msgid %q after %q (err %v): msgids must increase", next, msgid, err)
	}
	if got := key.msgsigLine(); !strings.HasPrefix(got, "MSGSIG ") || len(got) != len("MSGSIG ")+43 {
		t.Errorf("MSGSIG line %q", got)
	}
}

func TestBenchBody(t *testing.T) {
	tests := []struct {
		prefix string
		size   int
		seq    int
		want   string
	}{
		{"b6 ", 10, 7, "b6 7 xxxxx"},
		{"b6 ", 5, 123, "b6 12"},
		{"", 3, 0, "0 x"},
	}
	for _, tt := range tests {
		if got := benchBody(tt.prefix, tt.size)(tt.seq); got != tt.want {
			t.Errorf("benchBody(%q, %d)(%d) = %q, want %q", tt.prefix, tt.size, tt.seq, got, tt.want)
		}
	}
}

func TestEchoQueue(t *testing.T) {
	var q echoQueue
	if _, ok := q.pop(); ok {
		t.Fatal("pop from an empty queue")
	}
	t0 := time.Now()
	q.push(pendingEcho{msgid: "a", sent: t0}, pendingEcho{msgid: "b", sent: t0.Add(time.Second)})
	if oldest, ok := q.oldest(); !ok || !oldest.Equal(t0) || q.len() != 2 {
		t.Fatalf("oldest %v %t, len %d", oldest, ok, q.len())
	}
	for _, want := range []string{"a", "b"} {
		if p, ok := q.pop(); !ok || p.msgid != want {
			t.Fatalf("pop = %q %t, want %q", p.msgid, ok, want)
		}
	}
	q.push(pendingEcho{msgid: "c"}) // reuses the drained slice
	if p, ok := q.pop(); !ok || p.msgid != "c" || q.len() != 0 {
		t.Fatalf("pop = %q %t, len %d", p.msgid, ok, q.len())
	}
}

// TestVerifyWorkerClassifies checks how one verify response is counted.
func TestVerifyWorkerClassifies(t *testing.T) {
	const msgid = "01JABCDEFGHJKMNPQRSTVWXYZ0"
	tests := []struct {
		name                         string
		status                       int
		body                         string
		ok, notValid, non200, errors int
	}{
		{"valid", 200, `{"msgid":"` + msgid + `","verdict":"valid"}`, 1, 0, 0, 0},
		{"invalid verdict", 200, `{"msgid":"` + msgid + `","verdict":"invalid"}`, 0, 1, 0, 0},
		{"another message", 200, `{"msgid":"01JOTHER","verdict":"valid"}`, 0, 1, 0, 0},
		{"not found", 404, `{"error":"not found"}`, 0, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != verifyPath+msgid {
					http.Error(w, "wrong path "+r.URL.Path, http.StatusBadRequest)
					return
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			res := verifyOnce(srv.Client(), srv.URL, msgid)
			if res.OK != tt.ok || res.NotValid != tt.notValid || res.Non200 != tt.non200 || res.Errors != tt.errors || res.Requests != 1 {
				t.Errorf("result %+v", res)
			}
		})
	}
	t.Run("no server", func(t *testing.T) {
		addrs, err := FreeLoopbackAddrs(1)
		if err != nil {
			t.Fatal(err)
		}
		res := verifyOnce(&http.Client{}, "http://"+addrs[0], msgid)
		if res.Errors != 1 || res.Requests != 0 || len(res.FirstFails) != 1 {
			t.Errorf("result %+v", res)
		}
		if run := res.Run(); len(run.Notes) != 1 {
			t.Errorf("notes %q", run.Notes)
		}
	})
}

// verifyOnce makes one B7 request as the load does and returns its result.
func verifyOnce(client *http.Client, base, msgid string) VerifyLoadResult {
	w := &getWorker{client: client, base: base, timeout: 5 * time.Second, every: []byte(`"verdict":"valid"`),
		statuses: map[int]int{}, byLabel: map[string][]time.Duration{}}
	w.request(context.Background(), HTTPGetPath{Label: "verify", Path: verifyPath + msgid, Expect: `"msgid":"` + msgid + `"`})
	var get HTTPGetResult
	get.merge([]*getWorker{w})
	var res VerifyLoadResult
	res.fromHTTPGet(get)
	return res
}
