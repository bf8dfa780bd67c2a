package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

func TestFlowTextRoundTrip(t *testing.T) {
	tests := []struct {
		line string
		seq  int
		ok   bool
	}{
		{"@time=x;msgid=y :a!b@c PRIVMSG #f-1 :q42 xxxx", 42, true},
		{":a!b@c PRIVMSG #f-1 :q0", 0, true},
		{":a!b@c PRIVMSG #f-1 :hello", 0, false},
		{":a!b@c PRIVMSG #f-1 :q-3 x", 0, false},
		{":a!b@c NOTICE #f-1 :q1 x", 0, false},
		{":a!b@c PRIVMSG #f-1", 0, false},
	}
	for _, tt := range tests {
		text, ok := privmsgText(tt.line)
		seq, seqOK := flowSeq(text)
		if ok && seqOK != tt.ok || (!ok && tt.ok) || (tt.ok && seq != tt.seq) {
			t.Errorf("%q: seq %d %t (text %q %t), want %d %t", tt.line, seq, seqOK, text, ok, tt.seq, tt.ok)
		}
	}
	for _, seq := range []int{0, 7, 123456} {
		if got, ok := flowSeq(flowText(100)(seq)); !ok || got != seq || len(flowText(100)(seq)) != 100 {
			t.Errorf("flowText(%d) reads back as %d %t", seq, got, ok)
		}
		if got, ok := flowSeq(restText(100)(seq)); !ok || got != seq {
			t.Errorf("restText(%d) reads back as %d %t", seq, got, ok)
		}
	}
}

func FuzzFlowText(f *testing.F) {
	f.Add(":a PRIVMSG #c :q12 x")
	f.Add("@a=b :x PRIVMSG #c :")
	f.Add(" PRIVMSG  :q")
	f.Fuzz(func(t *testing.T, line string) {
		text, ok := privmsgText(line)
		if !ok {
			return
		}
		if seq, ok := flowSeq(text); ok && seq < 0 {
			t.Errorf("negative seq from %q", line)
		}
	})
}

func TestRampRates(t *testing.T) {
	r := RampConfig{StartRate: 10, Factor: 3, Steps: 4}.withDefaults()
	got := r.rates()
	want := []float64{10, 30, 90, 270}
	if len(got) != len(want) {
		t.Fatalf("rates %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rates %v, want %v", got, want)
		}
	}
	fixed := RampConfig{Rates: []float64{100, 190, 400}, StartRate: 10, Factor: 3, Steps: 4}.withDefaults()
	if got := fixed.rates(); !slices.Equal(got, []float64{100, 190, 400}) {
		t.Errorf("fixed rates %v, want 100, 190, 400", got)
	}
	if d := (RampConfig{}).withDefaults(); d.P99Limit != 50*time.Millisecond || d.Steps != 8 || d.Factor != 2 {
		t.Errorf("defaults %+v", d)
	}
}

func TestFanoutStepJudge(t *testing.T) {
	cfg := FanoutConfig{Ramp: RampConfig{P99Limit: 50 * time.Millisecond, StepDuration: time.Second}}
	acks := cfg
	acks.Acks = true
	ok := FanoutStep{Rate: 100, Sent: 100, SendRate: 100, Expected: 900, Delivered: 900, Latency: LatencySummary{P99: 10 * time.Millisecond}, sendTime: time.Second}
	tests := []struct {
		name string
		cfg  FanoutConfig
		step FanoutStep
		pass bool
		why  string
	}{
		{"all delivered in time", cfg, ok, true, ""},
		{"one missing", cfg, with(ok, func(s *FanoutStep) { s.Delivered = 899 }), false, "1 missing"},
		{"slow", cfg, with(ok, func(s *FanoutStep) { s.Latency.P99 = time.Second }), false, "p99"},
		{"sender behind", cfg, with(ok, func(s *FanoutStep) { s.Sent, s.SendRate = 50, 50 }), false, "sent only"},
		{"writes finished late", cfg, with(ok, func(s *FanoutStep) { s.sendTime, s.SendRate = 2*time.Second, 50 }), false, "sent only"},
		{"last tick a little late", cfg, with(ok, func(s *FanoutStep) { s.sendTime, s.SendRate = 1050*time.Millisecond, 95 }), true, ""},
		{"nothing sent", cfg, FanoutStep{Rate: 10}, false, "nothing sent"},
		{"acks judged by echo", acks, with(ok, func(s *FanoutStep) { s.Acked = 100; s.Echo.P99 = time.Millisecond }), true, ""},
		{"ack missing", acks, with(ok, func(s *FanoutStep) { s.Acked = 99 }), false, "1 missing"},
	}
	for _, tt := range tests {
		s := tt.step
		s.judge(tt.cfg)
		if s.Passed != tt.pass || !strings.Contains(s.Why, tt.why) {
			t.Errorf("%s: passed %t why %q, want %t and %q", tt.name, s.Passed, s.Why, tt.pass, tt.why)
		}
	}
}

func with(s FanoutStep, f func(*FanoutStep)) FanoutStep {
	f(&s)
	return s
}

// plainServer is a minimal RFC 1459 server without CAP: it registers
// with NICK/USER, answers JOIN with 366 and relays PRIVMSG to the other
// members of the channel. It shows the plain scenarios need nothing more.
type plainServer struct {
	ln      net.Listener
	mu      sync.Mutex
	members map[string][]net.Conn
	wg      sync.WaitGroup
}

func startPlainServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &plainServer{ln: ln, members: map[string][]net.Conn{}}
	var conns []net.Conn
	var connsMu sync.Mutex
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connsMu.Lock()
			conns = append(conns, c)
			connsMu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		connsMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connsMu.Unlock()
		s.wg.Wait()
	})
	return ln.Addr().String()
}

func (s *plainServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewScanner(c)
	nick := "*"
	var mu sync.Mutex
	send := func(line string) { mu.Lock(); defer mu.Unlock(); c.Write([]byte(line + "\r\n")) }
	for r.Scan() {
		fields := strings.SplitN(r.Text(), " ", 3)
		switch strings.ToUpper(fields[0]) {
		case "CAP":
			send(":plain 421 " + nick + " CAP :Unknown command")
		case "NICK":
			nick = fields[1]
		case "USER":
			send(":plain 001 " + nick + " :Welcome")
		case "JOIN":
			s.mu.Lock()
			s.members[fields[1]] = append(s.members[fields[1]], c)
			s.mu.Unlock()
			send(":plain 366 " + nick + " " + fields[1] + " :End of /NAMES list.")
		case "PRIVMSG":
			s.mu.Lock()
			others := append([]net.Conn(nil), s.members[fields[1]]...)
			s.mu.Unlock()
			for _, o := range others {
				if o != c {
					o.Write([]byte(":" + nick + "!u@h " + r.Text() + "\r\n"))
				}
			}
		case "QUIT":
			send("ERROR :Closing link")
			return
		}
	}
}

func TestFanoutAgainstAPlainServer(t *testing.T) {
	addr := startPlainServer(t)
	res, err := RunFanout(testContext(t), Target{IRCAddr: addr}, FanoutConfig{
		Channels: 2, ChannelSize: 5, RandomSenders: true, SetupConcurrency: 4,
		Ramp: RampConfig{StartRate: 40, Steps: 2, StepDuration: 200 * time.Millisecond, P99Limit: time.Hour, Drain: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Connected != 10 || len(res.Steps) != 2 {
		var why []string
		for _, s := range res.Steps {
			why = append(why, fmt.Sprintf("%+v", s))
		}
		t.Fatalf("connected %d, %d steps: %s", res.Connected, len(res.Steps), strings.Join(why, " | "))
	}
	for i, s := range res.Steps {
		if s.Sent == 0 || s.Expected != 4*s.Sent || s.Delivered != s.Expected || s.Duplicates != 0 {
			t.Errorf("step %d: sent %d, %d/%d delivered, %d duplicates", i, s.Sent, s.Delivered, s.Expected, s.Duplicates)
		}
	}
	run := res.Run()
	if len(run.Measurements) == 0 || len(run.Notes) < 2 {
		t.Errorf("report run %+v", run)
	}
}

// TestFanoutFixedRatesRunEveryStep: fixed rates run every step, in order, whether the steps
// before passed or not; the best step is the last of the passing run the steps begin with.
func TestFanoutFixedRatesRunEveryStep(t *testing.T) {
	addr := startPlainServer(t)
	for _, tt := range []struct {
		name  string
		p99   time.Duration
		best  int
		notes string
	}{
		{"every step fails", time.Nanosecond, -1, "fixed rates: 0 of 3 steps passed"},
		{"every step passes", time.Hour, 2, "fixed rates: 3 of 3 steps passed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunFanout(testContext(t), Target{IRCAddr: addr}, FanoutConfig{
				Channels: 1, ChannelSize: 3, SetupConcurrency: 3,
				Ramp: RampConfig{Rates: []float64{40, 20, 60}, StepDuration: 200 * time.Millisecond, P99Limit: tt.p99, Drain: 30 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			var rates []float64
			for _, s := range res.Steps {
				rates = append(rates, s.Rate)
			}
			if !slices.Equal(rates, []float64{40, 20, 60}) || res.Best != tt.best || !res.Fixed {
				t.Fatalf("steps at %v, best %d, fixed %v; want 40, 20, 60, best %d, fixed", rates, res.Best, res.Fixed, tt.best)
			}
			if run := res.Run(); !slices.Contains(run.Notes, tt.notes) {
				t.Errorf("notes %q lack %q", run.Notes, tt.notes)
			}
		})
	}
}

func TestJoinStormAgainstAPlainServer(t *testing.T) {
	addr := startPlainServer(t)
	res, err := RunJoinStorm(testContext(t), Target{IRCAddr: addr}, JoinStormConfig{Clients: 30, SetupConcurrency: 8, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Joined != 30 || res.Killed != 0 || res.Latency.Count != 30 {
		t.Errorf("joined %d, killed %d, latency %+v: %q", res.Joined, res.Killed, res.Latency, res.FirstErrors)
	}
}

func TestFlowScenariosAgainstANode(t *testing.T) {
	n := nodetest.Start(t, nil)
	tcp := Target{IRCAddr: n.IRCAddr(), HTTPURL: "http://" + n.HTTPAddr()}
	ramp := RampConfig{StartRate: 20, Steps: 2, StepDuration: 200 * time.Millisecond, P99Limit: time.Hour, Drain: 30 * time.Second}

	t.Run("B3", func(t *testing.T) {
		res, err := RunFanout(testContext(t), tcp, FanoutConfig{Channels: 1, ChannelSize: 12, Ramp: ramp, SetupConcurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range res.Steps {
			if s.Sent == 0 || s.Expected != 11*s.Sent || s.Delivered != s.Expected || s.Duplicates != 0 {
				t.Errorf("step %d: sent %d, %d/%d delivered, %d duplicates", i, s.Sent, s.Delivered, s.Expected, s.Duplicates)
			}
		}
	})
	t.Run("B4", func(t *testing.T) {
		res, err := RunFanout(testContext(t), tcp, FanoutConfig{Channels: 4, ChannelSize: 5, RandomSenders: true, Ramp: ramp, SetupConcurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		if res.Connected != 20 || res.Steps[0].Delivered != res.Steps[0].Expected || res.Steps[0].Expected == 0 {
			t.Errorf("connected %d, step %+v", res.Connected, res.Steps[0])
		}
	})
	t.Run("B11", func(t *testing.T) {
		res, err := RunFanout(testContext(t), tcp, FanoutConfig{Channels: 3, ChannelSize: 1, Acks: true, Ramp: ramp})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range res.Steps {
			if s.Sent == 0 || s.Acked != s.Sent || s.Echo.Count != int(s.Sent) {
				t.Errorf("step %d: sent %d, acked %d, echo %+v", i, s.Sent, s.Acked, s.Echo)
			}
		}
	})
	t.Run("B5", func(t *testing.T) {
		res, err := RunJoinStorm(testContext(t), tcp, JoinStormConfig{Clients: 25, SetupConcurrency: 5})
		if err != nil {
			t.Fatal(err)
		}
		if res.Joined != 25 || res.Killed != 0 {
			t.Errorf("joined %d, killed %d: %q", res.Joined, res.Killed, res.FirstErrors)
		}
	})
	for _, kind := range []RESTLoadKind{RESTHistory, RESTSearch} {
		t.Run(string(kind), func(t *testing.T) {
			res, err := RunRESTLoad(testContext(t), tcp, RESTLoadConfig{
				Kind: kind, Messages: 120, Channels: 3, SeedRate: 400, Concurrency: 4, Duration: 400 * time.Millisecond, WriteRate: 40,
				IndexProbeEvery: 20 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stored < 120 || res.Requests == 0 || res.OK != res.Requests {
				t.Errorf("stored %d, %d requests, %d OK: %q", res.Stored, res.Requests, res.OK, res.FirstFails)
			}
			// A search load measures how soon written messages become searchable.
			if kind == RESTSearch && (res.IndexLag.Count == 0 || res.IndexMissing != 0) {
				t.Errorf("index lag %+v, %d probed messages never found", res.IndexLag, res.IndexMissing)
			}
		})
	}
}

// TestRegisterPlainRequestsOfferedCaps checks the CAP negotiation against
// a node: echo-message is acknowledged when asked for.
func TestRegisterPlainRequestsOfferedCaps(t *testing.T) {
	n := nodetest.Start(t, nil)
	d, err := newDialer(Target{IRCAddr: n.IRCAddr()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := d.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.close()
	caps, err := registerPlain(ctx, conn, "capcheck", "echo-message", "no-such-cap")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"echo-message", "server-time", "message-tags"} {
		if !contains(caps, want) {
			t.Errorf("caps %v lack %s", caps, want)
		}
	}
	if contains(caps, "no-such-cap") {
		t.Errorf("caps %v hold a capability the server does not offer", caps)
	}
}
