package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// LoginStormConfig configures scenario B2: SASL ATPROTO-CHALLENGE logins,
// Concurrency of them in flight, for Duration or Count logins.
type LoginStormConfig struct {
	Concurrency int           // logins in flight; default 64
	Duration    time.Duration // how long to start new logins, when Count is 0; default 10 s
	Count       int           // total logins; 0 runs for Duration
	Curve       Curve         // default CurveEd25519
	// Keys is how many distinct identities take turns (generated before
	// timing starts); default 4096, at most Count. Login i uses key
	// i mod Keys and a nick of its own: a nick is not free again the
	// moment the server has closed the connection of its last user.
	Keys    int
	Timeout time.Duration // bound on one login, and separately on its QUIT; default 10 s
	// AwaitQuit holds a login's slot until the server has closed the
	// connection after QUIT. By default the slot is free at 001, as the
	// scenario (connect → CAP LS 302 → SASL → 001, Concurrency in flight)
	// defines a login: QUIT and the wait for the server's close then run in
	// the background, at most QuitBacklog at once (a login waits for room),
	// and the phase ends only once they are all done, so the server's work
	// for them stays inside the measured time and CPU.
	AwaitQuit bool
	// QuitBacklog bounds the quits in the background; default 4 × Concurrency.
	QuitBacklog int
	// ServerCPU, when set, reads the server's CPU time used so far
	// (ReadProcessCPU of its PID), so the result tells whether the server
	// was saturated.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c LoginStormConfig) withDefaults() LoginStormConfig {
	orDefault(&c.Concurrency, 64)
	if c.Count <= 0 {
		orDefault(&c.Duration, 10*time.Second)
	}
	if c.Curve == "" {
		c.Curve = CurveEd25519
	}
	orDefault(&c.Keys, 4096)
	if c.Count > 0 {
		c.Keys = min(c.Keys, c.Count)
	}
	orDefault(&c.Timeout, 10*time.Second)
	orDefault(&c.QuitBacklog, 4*c.Concurrency)
	labelOr(&c.Label, "B2")
	return c
}

// LoginStormResult is the outcome of one B2 run.
type LoginStormResult struct {
	Transport       Transport      `json:"transport"`
	Curve           Curve          `json:"curve"`
	Concurrency     int            `json:"concurrency"`
	Attempts        int            `json:"attempts"`
	Succeeded       int            `json:"succeeded"`
	Failed          int            `json:"failed"`
	Failures        map[string]int `json:"failures,omitempty"` // by stage and kind, e.g. "sasl: refused"
	FirstErrors     []string       `json:"first_errors,omitempty"`
	QuitTimeouts    int            `json:"quit_timeouts"` // logins whose connection the server did not close after QUIT in time
	Elapsed         time.Duration  `json:"elapsed_ns"`    // from the first connect to the end of the last login
	LoginsPerSecond float64        `json:"logins_per_second"`
	Latency         LatencySummary `json:"latency"` // connect → 001 of the successful logins
	ClientCPU       time.Duration  `json:"client_cpu_ns"`
	ServerCPU       time.Duration  `json:"server_cpu_ns,omitempty"` // when LoginStormConfig.ServerCPU is set
	KeygenTime      time.Duration  `json:"keygen_ns"`               // before timing
}

// identity is a pre-generated key.
type identity struct {
	signer ircclient.Signer
	did    string
}

// maxFirstErrors is how many failure messages a result keeps verbatim.
const maxFirstErrors = 3

// stormWorker collects one worker's measurements without sharing.
type stormWorker struct {
	latencies    []time.Duration
	failures     map[string]int
	firstErrors  []string
	quitTimeouts int
}

// RunLoginStorm runs scenario B2. Each login connects, sends CAP LS 302,
// CAP REQ :sasl and AUTHENTICATE ATPROTO-CHALLENGE (each after the reply
// to the previous one), signs the challenge, waits for 903 and the
// API-BEARER NOTICE, sends NICK/USER/CAP END and waits for 001: the
// latency is connect → 001. It then sends QUIT and reads until the server
// closes (so the TIME_WAIT sockets stay on the server's side): in the
// background by default, within the login's slot with AwaitQuit.
func RunLoginStorm(ctx context.Context, target Target, cfg LoginStormConfig) (LoginStormResult, error) {
	cfg = cfg.withDefaults()
	d, err := newDialer(target)
	if err != nil {
		return LoginStormResult{}, err
	}
	out := newLockedWriter(cfg.Progress)
	res := LoginStormResult{Transport: d.target.Transport, Curve: cfg.Curve, Concurrency: cfg.Concurrency}

	keygenStart := time.Now()
	signers, err := GenerateSigners(cfg.Curve, cfg.Keys)
	if err != nil {
		return res, err
	}
	tag := randomTag(4)
	ids := make([]identity, len(signers))
	for i, s := range signers {
		ids[i] = identity{signer: s, did: s.DID()}
	}
	res.KeygenTime = time.Since(keygenStart)
	progressf(out, "%s: %d %s keys generated in %.2fs", cfg.Label, len(ids), cfg.Curve, res.KeygenTime.Seconds())

	var next, done, failed atomic.Int64
	workers := make([]*stormWorker, cfg.Concurrency)
	for w := range workers {
		workers[w] = &stormWorker{failures: map[string]int{}}
	}
	ph, err := startPhase(out, cfg.ServerCPU, func(el time.Duration) string {
		n := done.Load()
		return fmt.Sprintf("%s: %.0fs %d logins (%.0f/s), %d failed", cfg.Label, el.Seconds(), n, perSecond(n, el), failed.Load())
	})
	if err != nil {
		return res, err
	}
	var deadline time.Time
	if cfg.Count == 0 {
		deadline = time.Now().Add(cfg.Duration)
	}
	quits := newQuitBacklog(cfg.QuitBacklog)
	closedLoop(ctx, cfg.Concurrency, deadline, func(w int) bool {
		i := next.Add(1) - 1
		if cfg.Count > 0 && i >= int64(cfg.Count) {
			return false
		}
		sw := workers[w]
		id := &ids[int(i)%len(ids)]
		nick := "b2" + tag + strconv.FormatInt(i, 10) // decimal: no two nicks of a run are confusable (1 and l, 0 and o)
		conn, lat, err := loginUntilWelcome(ctx, d, id, nick, cfg.Timeout)
		if err != nil {
			failed.Add(1)
			sw.recordFailure(err)
			return true
		}
		done.Add(1)
		sw.latencies = append(sw.latencies, lat)
		if cfg.AwaitQuit {
			if !quitAndDrain(ctx, conn, cfg.Timeout) {
				sw.quitTimeouts++
			}
			return true
		}
		quits.quit(ctx, conn, cfg.Timeout)
		return true
	})
	quits.wait()
	totals, err := ph.end()
	if err != nil {
		return res, err
	}
	res.Elapsed, res.ClientCPU, res.ServerCPU = totals.Elapsed, totals.ClientCPU, totals.ServerCPU
	res.merge(workers)
	res.QuitTimeouts += quits.timeouts()
	res.LoginsPerSecond = perSecond(int64(res.Succeeded), res.Elapsed)
	progressf(out, "%s: %d logins in %.2fs = %.0f/s, p50 %s p99 %s, %d failed",
		cfg.Label, res.Succeeded, res.Elapsed.Seconds(), res.LoginsPerSecond,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond), res.Failed)
	return res, ctx.Err()
}

func (r *LoginStormResult) merge(workers []*stormWorker) {
	var all []time.Duration
	r.Failures = map[string]int{}
	for _, w := range workers {
		all = append(all, w.latencies...)
		for k, n := range w.failures {
			r.Failures[k] += n
			r.Failed += n
		}
		for _, e := range w.firstErrors {
			if len(r.FirstErrors) < maxFirstErrors {
				r.FirstErrors = append(r.FirstErrors, e)
			}
		}
		r.QuitTimeouts += w.quitTimeouts
	}
	r.Succeeded = len(all)
	r.Attempts = r.Succeeded + r.Failed
	r.Latency = SummarizeLatencies(all)
	if len(r.Failures) == 0 {
		r.Failures = nil
	}
}

func (w *stormWorker) recordFailure(err error) {
	w.failures[failureKind(err)]++
	if len(w.firstErrors) < maxFirstErrors {
		w.firstErrors = append(w.firstErrors, err.Error())
	}
}

func failureKind(err error) string {
	stage := "login"
	var le *loginError
	if errors.As(err, &le) {
		stage = le.stage
	}
	switch {
	case isTimeout(err):
		return stage + ": timeout"
	case errors.Is(err, ErrRefused):
		return stage + ": refused"
	case errors.Is(err, io.EOF):
		return stage + ": closed by the server"
	}
	return stage + ": error"
}

// FailureKinds lists the failure counts of a result as "kind=n" in a
// stable order.
func (r LoginStormResult) FailureKinds() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Failures)) {
		parts = append(parts, k+"="+strconv.Itoa(r.Failures[k]))
	}
	return strings.Join(parts, ", ")
}

// loginUntilWelcome connects and logs in up to 001 within timeout, and
// returns the open connection and the connect → 001 latency.
func loginUntilWelcome(ctx context.Context, d *dialer, id *identity, nick string, timeout time.Duration) (lineConn, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, 0, &loginError{"connect", err}
	}
	if err := saslLogin(ctx, conn, id, nick); err != nil {
		conn.close()
		return nil, 0, err
	}
	return conn, time.Since(start), nil
}

// quitAndDrain sends QUIT, reads until the server closes the connection
// and closes it; it says whether the server closed it within timeout.
func quitAndDrain(ctx context.Context, conn lineConn, timeout time.Duration) bool {
	defer conn.close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := conn.writeLines(ctx, "QUIT"); err != nil {
		return false
	}
	return drainUntilClosed(ctx, conn)
}

// quitBacklog runs the logins' QUITs in the background, at most a fixed
// number at once.
type quitBacklog struct {
	slots    chan struct{}
	wg       sync.WaitGroup
	unclosed atomic.Int64 // connections the server did not close in time
}

func newQuitBacklog(n int) *quitBacklog {
	return &quitBacklog{slots: make(chan struct{}, n)}
}

// quit hands conn to a background QUIT, waiting while the backlog is full.
// When ctx ends first the connection is closed without a QUIT.
func (q *quitBacklog) quit(ctx context.Context, conn lineConn, timeout time.Duration) {
	select {
	case q.slots <- struct{}{}:
	case <-ctx.Done():
		conn.close()
		return
	}
	q.wg.Go(func() {
		defer func() { <-q.slots }()
		if !quitAndDrain(ctx, conn, timeout) {
			q.unclosed.Add(1)
		}
	})
}

// wait returns once every background QUIT is done.
func (q *quitBacklog) wait() { q.wg.Wait() }

// timeouts is how many connections were not closed by the server in time.
func (q *quitBacklog) timeouts() int { return int(q.unclosed.Load()) }
