package loadgen

import (
	"context"
	"encoding/base64"
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

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/ircclient"
)

// saslChunkSize is the IRCv3 AUTHENTICATE payload chunk length.
const saslChunkSize = 400

// bearerPrefix starts the NOTICE text that carries the REST bearer token.
const bearerPrefix = "API-BEARER "

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
	Keys     int
	Timeout  time.Duration // bound on one login, QUIT included; default 10 s
	Progress io.Writer     // progress lines; nil for none
	Label    string        // prefix of progress lines
}

func (c LoginStormConfig) withDefaults() LoginStormConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Count <= 0 && c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Curve == "" {
		c.Curve = CurveEd25519
	}
	if c.Keys <= 0 {
		c.Keys = 4096
	}
	if c.Count > 0 {
		c.Keys = min(c.Keys, c.Count)
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Label == "" {
		c.Label = "B2"
	}
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
	KeygenTime      time.Duration  `json:"keygen_ns"` // before timing
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
// closes, so the slot is free only once the server is done with the
// session (and the TIME_WAIT sockets stay on the server's side).
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
	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	stopProgress := startProgress(out, progressInterval, func() string {
		el := time.Since(start).Seconds()
		n := done.Load()
		return fmt.Sprintf("%s: %.0fs %d logins (%.0f/s), %d failed", cfg.Label, el, n, float64(n)/el, failed.Load())
	})
	var wg sync.WaitGroup
	for w := range workers {
		sw := &stormWorker{failures: map[string]int{}}
		workers[w] = sw
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if (cfg.Count > 0 && i >= int64(cfg.Count)) || (cfg.Count == 0 && !time.Now().Before(deadline)) {
					return
				}
				id := &ids[int(i)%len(ids)]
				nick := "b2" + tag + strconv.FormatInt(i, 36)
				lat, quitOK, err := loginOnce(ctx, d, id, nick, cfg.Timeout)
				if err != nil {
					failed.Add(1)
					sw.recordFailure(err)
					continue
				}
				done.Add(1)
				sw.latencies = append(sw.latencies, lat)
				if !quitOK {
					sw.quitTimeouts++
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	stopProgress()
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU = cpuEnd - cpuStart
	res.merge(workers)
	if res.Elapsed > 0 {
		res.LoginsPerSecond = float64(res.Succeeded) / res.Elapsed.Seconds()
	}
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

// loginError says at which step a login failed.
type loginError struct {
	stage string // connect, caps, sasl, register
	err   error
}

func (e *loginError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *loginError) Unwrap() error { return e.err }

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

// loginOnce performs one login and returns its connect → 001 latency and
// whether the server closed the connection after QUIT within the timeout.
func loginOnce(ctx context.Context, d *dialer, id *identity, nick string, timeout time.Duration) (time.Duration, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	conn, err := d.dial(ctx)
	if err != nil {
		return 0, false, &loginError{"connect", err}
	}
	defer conn.close()
	if err := saslLogin(ctx, conn, id, nick); err != nil {
		return 0, false, err
	}
	latency := time.Since(start)
	if err := conn.writeLines(ctx, "QUIT"); err != nil {
		return latency, false, nil
	}
	return latency, drainUntilClosed(ctx, conn), nil
}

// saslLogin runs the login steps up to 001.
func saslLogin(ctx context.Context, conn lineConn, id *identity, nick string) error {
	if err := conn.writeLines(ctx, "CAP LS 302"); err != nil {
		return &loginError{"caps", err}
	}
	if _, err := readUntil(ctx, conn, nil, func(m ircmsg.Message) bool {
		return m.Command == "CAP" && m.Param(1) == "LS" && m.Param(2) != "*"
	}); err != nil {
		return &loginError{"caps", err}
	}
	if err := conn.writeLines(ctx, "CAP REQ :sasl"); err != nil {
		return &loginError{"caps", err}
	}
	ack, err := readUntil(ctx, conn, nil, func(m ircmsg.Message) bool {
		return m.Command == "CAP" && (m.Param(1) == "ACK" || m.Param(1) == "NAK")
	})
	if err != nil {
		return &loginError{"caps", err}
	}
	if ack.Param(1) == "NAK" {
		return &loginError{"caps", fmt.Errorf("%w: CAP NAK %s", ErrRefused, ack.Param(2))}
	}
	if err := authenticate(ctx, conn, id); err != nil {
		return &loginError{"sasl", err}
	}
	if err := conn.writeLines(ctx, "NICK "+nick, "USER "+nick+" 0 * :"+nick, "CAP END"); err != nil {
		return &loginError{"register", err}
	}
	if _, err := readUntil(ctx, conn, registrationFailures, isCommand("001")); err != nil {
		return &loginError{"register", err}
	}
	return nil
}

// authenticate runs the ATPROTO-CHALLENGE exchange up to 903 and the
// API-BEARER NOTICE.
func authenticate(ctx context.Context, conn lineConn, id *identity) error {
	if err := conn.writeLines(ctx, "AUTHENTICATE ATPROTO-CHALLENGE"); err != nil {
		return err
	}
	var encoded strings.Builder
	for {
		m, err := readUntil(ctx, conn, saslFailures, isCommand("AUTHENTICATE"))
		if err != nil {
			return fmt.Errorf("waiting for the challenge: %w", err)
		}
		chunk := m.Param(0)
		if chunk != "+" {
			encoded.WriteString(chunk)
		}
		if len(chunk) < saslChunkSize {
			break
		}
	}
	challenge, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(encoded.String(), "="))
	if err != nil {
		return fmt.Errorf("decoding the challenge: %w", err)
	}
	sig, err := id.signer.Sign(challenge)
	if err != nil {
		return fmt.Errorf("signing the challenge: %w", err)
	}
	// The DID and a base64url signature need no JSON escaping.
	body := `{"did":"` + id.did + `","signature":"` + base64.RawURLEncoding.EncodeToString(sig) + `","method":"crypto"}`
	if err := conn.writeLines(ctx, authenticateLines(base64.RawURLEncoding.EncodeToString([]byte(body)))...); err != nil {
		return err
	}
	succeeded, bearer := false, false
	for !succeeded || !bearer {
		m, err := readUntil(ctx, conn, saslFailures, func(m ircmsg.Message) bool {
			return m.Command == "903" || m.Command == "NOTICE"
		})
		if err != nil {
			return fmt.Errorf("waiting for 903 and the bearer token: %w", err)
		}
		if m.Command == "903" {
			succeeded = true
		} else if strings.HasPrefix(m.Param(len(m.Params)-1), bearerPrefix) {
			bearer = true
		}
	}
	return nil
}

// authenticateLines splits an encoded payload into AUTHENTICATE lines of
// 400-byte chunks; a payload that is a whole number of chunks (or empty)
// ends with "AUTHENTICATE +".
func authenticateLines(payload string) []string {
	lines := make([]string, 0, len(payload)/saslChunkSize+1)
	for len(payload) >= saslChunkSize {
		lines = append(lines, "AUTHENTICATE "+payload[:saslChunkSize])
		payload = payload[saslChunkSize:]
	}
	if payload == "" {
		return append(lines, "AUTHENTICATE +")
	}
	return append(lines, "AUTHENTICATE "+payload)
}

// drainUntilClosed reads until the server closes the connection and says
// whether that happened before ctx ended.
func drainUntilClosed(ctx context.Context, conn lineConn) bool {
	for {
		if _, err := conn.readLine(ctx); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}
