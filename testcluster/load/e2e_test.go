package load

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fastSettle settles after three samples, whatever the process does: the
// test process's RSS is not what these tests check.
var fastSettle = SettleOptions{Interval: 10 * time.Millisecond, QuietSamples: 3, Tolerance: 1 << 30, Timeout: 10 * time.Second}

func TestScenariosAgainstANode(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("B1 reads /proc")
	}
	n := nodetest.Start(t, nil)
	tcp := Target{IRCAddr: n.IRCAddr(), Transport: TransportTCP}
	ws := Target{WSURL: "ws://" + n.HTTPAddr() + "/irc", Transport: TransportWebSocket}
	rss := func() (int64, error) { return ReadRSS(os.Getpid()) }

	for _, target := range []Target{tcp, ws} {
		t.Run("B1 "+string(target.Transport), func(t *testing.T) {
			var progress strings.Builder
			var mu sync.Mutex
			res, err := RunIdle(testContext(t), target, IdleConfig{
				Clients: 20, ChannelSize: 10, SetupConcurrency: 8, Settle: fastSettle, RSS: rss,
				Progress: writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return progress.Write(p) }),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Held != 20 || res.SetupFailed != 0 || res.Dropped != 0 {
				t.Errorf("held %d, setup failed %d, dropped %d (first error %q)", res.Held, res.SetupFailed, res.Dropped, res.FirstError)
			}
			if res.RSSBeforeKB <= 0 || res.RSSAfterKB <= 0 || !res.Settled {
				t.Errorf("RSS before %d after %d settled %t", res.RSSBeforeKB, res.RSSAfterKB, res.Settled)
			}
			if res.Transport != target.Transport {
				t.Errorf("transport %q, want %q", res.Transport, target.Transport)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(progress.String(), "KB/connection") {
				t.Errorf("no final progress line in %q", progress.String())
			}
		})
	}

	tests := []struct {
		name   string
		target Target
		curve  Curve
		count  int
	}{
		{"B2 ed25519 tcp", tcp, CurveEd25519, 50},
		{"B2 secp256k1 tcp", tcp, CurveSecp256k1, 30},
		{"B2 ed25519 ws", ws, CurveEd25519, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunLoginStorm(testContext(t), tt.target, LoginStormConfig{
				Concurrency: 8, Count: tt.count, Curve: tt.curve, Keys: 16,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Succeeded != tt.count || res.Failed != 0 || res.Attempts != tt.count {
				t.Errorf("succeeded %d failed %d of %d: %s %q", res.Succeeded, res.Failed, res.Attempts, res.FailureKinds(), res.FirstErrors)
			}
			if res.QuitTimeouts != 0 {
				t.Errorf("%d connections not closed by the server after QUIT", res.QuitTimeouts)
			}
			if res.Latency.Count != tt.count || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 || res.LoginsPerSecond <= 0 {
				t.Errorf("latency %+v, %f logins/s", res.Latency, res.LoginsPerSecond)
			}
		})
	}

	t.Run("B2 for a duration", func(t *testing.T) {
		res, err := RunLoginStorm(testContext(t), tcp, LoginStormConfig{Concurrency: 4, Duration: 200 * time.Millisecond, Keys: 8})
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed != 0 || res.Succeeded != res.Attempts {
			t.Errorf("succeeded %d failed %d: %q", res.Succeeded, res.Failed, res.FirstErrors)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLoginStormCountsFailures runs logins against a listener that hangs
// up at once: every login fails, none hangs.
func TestLoginStormCountsFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	res, err := RunLoginStorm(testContext(t), Target{IRCAddr: ln.Addr().String()}, LoginStormConfig{Concurrency: 4, Count: 12, Keys: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 12 || res.Succeeded != 0 {
		t.Errorf("failed %d succeeded %d, want 12 and 0", res.Failed, res.Succeeded)
	}
	if len(res.FirstErrors) == 0 || res.FailureKinds() == "" {
		t.Errorf("no failure detail: %+v", res)
	}
}

// TestIdleSetupFailuresAreCounted points B1 at a port where nothing
// listens.
func TestIdleSetupFailuresAreCounted(t *testing.T) {
	addrs, err := FreeLoopbackAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunIdle(testContext(t), Target{IRCAddr: addrs[0]}, IdleConfig{
		Clients: 5, Settle: fastSettle, RSS: sequence(1000),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.SetupFailed != 5 || res.Held != 0 || res.KBPerConnection != 0 || res.FirstError == "" {
		t.Errorf("result %+v", res)
	}
}

func TestIdleNeedsClientsAndRSS(t *testing.T) {
	if _, err := RunIdle(context.Background(), Target{IRCAddr: "127.0.0.1:1"}, IdleConfig{RSS: sequence(1)}); err == nil {
		t.Error("no clients accepted")
	}
	if _, err := RunIdle(context.Background(), Target{IRCAddr: "127.0.0.1:1"}, IdleConfig{Clients: 1}); err == nil {
		t.Error("no RSS reader accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunIdle(ctx, Target{IRCAddr: "127.0.0.1:1"}, IdleConfig{Clients: 1, RSS: sequence(1), Settle: fastSettle}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: error %v", err)
	}
}
