package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// catchUpSetting reads a duration or rate of TestFederationCatchUp from the environment, or def.
func catchUpSetting[T time.Duration | int](t *testing.T, name string, def T) T {
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	var v T
	switch p := any(&v).(type) {
	case *time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", name, raw)
		}
		*p = d
	case *int:
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive integer", name, raw)
		}
		*p = n
	}
	return v
}

// TestFederationCatchUp: two servers federate #fed; alpha's user keeps sending at a steady rate
// while the link to beta is cut (beta unreachable) and then restored. Every message reaches
// beta's member exactly once, and the test reports how long beta took to catch up after the
// link came back. Defaults keep it short; the figures in BENCHMARKS.md come from
//
//	PALAVER_FED_CUT=60s PALAVER_FED_RATE=50 go test -race -run TestFederationCatchUp -v ./node/
//
// The allow-list is visible too: each server exports its peer with its trust level.
func TestFederationCatchUp(t *testing.T) {
	cut := catchUpSetting(t, "PALAVER_FED_CUT", 3*time.Second)
	rate := catchUpSetting(t, "PALAVER_FED_RATE", 20)

	betaURL := newForwarder(t) // alpha reaches beta through it: cutting it cuts the link
	alpha := startNode(t, t.TempDir(), func(c *Config) {
		federated("alpha.test", betaDID, betaURL.addr())(c)
		c.NoFloodLimits = true      // the load is paced by the test
		c.PprofAddr = "127.0.0.1:0" // the operator's listener: the peers' metrics are not public
	})
	beta := startNode(t, t.TempDir(), federated("beta.test", alphaDID, alpha.HTTPAddr()))
	betaURL.to(beta)

	_, body := httpDo(t, "GET", "http://"+alpha.PprofAddr()+"/metrics", "", nil)
	if want := `palaver_exchange_peer{peer="did:web:beta.test",trust="full"} 1`; !strings.Contains(string(body), want) {
		t.Fatalf("alpha's metrics lack %s", want)
	}

	alice, _, _ := fedUser(t, alpha, "alice")
	bob, _, _ := fedUser(t, beta, "bob")
	alice.Send("PRIVMSG #fed :warm-up")
	expect(t, bob, "PRIVMSG", "warm-up")

	// bob's reader counts every message of the load by its text.
	var mu sync.Mutex
	seen := map[string]int{}
	pongs := map[string]bool{}
	readCtx, stopReading := context.WithCancel(context.Background())
	readDone := make(chan error, 1)
	go func() {
		for {
			m, err := bob.ReadMessage(readCtx)
			if err != nil {
				readDone <- err
				return
			}
			if m.Command == "PING" && len(m.Params) > 0 { // the server checks that an idle reader is alive
				bob.Send("PONG :" + m.Params[len(m.Params)-1])
				continue
			}
			mu.Lock()
			switch {
			case m.Command == "PRIVMSG" && len(m.Params) == 2 && strings.HasPrefix(m.Params[1], "load "):
				seen[m.Params[1]]++
			case m.Command == "PONG" && len(m.Params) > 0:
				pongs[m.Params[len(m.Params)-1]] = true
			}
			mu.Unlock()
		}
	}()
	go func() { // alice's echoes are read and dropped, so her connection keeps up
		for {
			m, err := alice.ReadMessage(readCtx)
			if err != nil {
				return
			}
			if m.Command == "PING" && len(m.Params) > 0 {
				alice.Send("PONG :" + m.Params[len(m.Params)-1])
			}
		}
	}()
	t.Cleanup(func() {
		stopReading()
		if err := <-readDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("bob's reader: %v", err)
		}
	})

	// The load: one message every 1/rate s for 1 s, the cut, and 1 s after it; sentBefore is
	// how many were sent when the link came back.
	var sent, sentBefore int
	var restored time.Time
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	start := time.Now()
	cutAt, restoreAt, endAt := start.Add(time.Second), start.Add(time.Second+cut), start.Add(2*time.Second+cut)
	linkCut := false
	for now := range tick.C {
		if !linkCut && now.After(cutAt) {
			betaURL.to(nil)
			linkCut = true
		}
		if restored.IsZero() && now.After(restoreAt) {
			sentBefore = sent
			betaURL.to(beta)
			restored = time.Now()
		}
		if now.After(endAt) {
			break
		}
		if err := alice.Send(fmt.Sprintf("PRIVMSG #fed :load %06d", sent)); err != nil {
			t.Fatal(err)
		}
		sent++
	}

	// Catching up is bounded by the federation limit (100 events/s): allow twice that time.
	deadline := 30*time.Second + time.Duration(sent)*20*time.Millisecond
	delivered := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range n {
			if seen[fmt.Sprintf("load %06d", i)] == 0 {
				return false
			}
		}
		return true
	}
	poll.Within(t, deadline, "beta caught up with what was sent during the cut", func() bool { return delivered(sentBefore) })
	caughtUp := time.Since(restored)
	poll.Within(t, deadline, "every message delivered on beta", func() bool { return delivered(sent) })
	// A message sent again (a frame whose acknowledgement was lost) would come after: wait
	// until beta acknowledged all of alpha's rows, beta's subscribers handled all it stored, and
	// bob's connection answered a PING sent after that; then count.
	out := exchange.CursorKey{Dir: exchange.Out, Log: exchange.LogMessages, Peer: betaDID}
	poll.Within(t, deadline, "beta acknowledged every row of alpha", func() bool {
		cursor, err := exchange.ReadCursor(testCtx(t), alpha.events, out)
		if err != nil {
			t.Fatal(err)
		}
		rest, err := alpha.events.OriginAfter(testCtx(t), alpha.cfg.NodeName, cursor, 1)
		return err == nil && len(rest) == 0
	})
	if err := beta.streams.Stored.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := bob.Send("PING settled"); err != nil {
		t.Fatal(err)
	}
	poll.Within(t, deadline, "bob's PONG", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return pongs["settled"]
	})
	mu.Lock()
	defer mu.Unlock()
	for text, n := range seen {
		if n != 1 {
			t.Fatalf("%q delivered %d times on beta", text, n)
		}
	}
	if len(seen) != sent {
		t.Fatalf("beta saw %d distinct messages of %d", len(seen), sent)
	}
	t.Logf("catch-up: %d messages at %d/s, link cut %s (%d sent before it came back): all delivered once; caught up %.2f s after the link came back",
		sent, rate, cut, sentBefore, caughtUp.Seconds())
}
