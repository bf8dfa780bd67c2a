package raft

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/trust"
)

// testTimeout bounds every wait in these tests; generous for a loaded CI box.
const testTimeout = 20 * time.Second

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fastConfig is a single-node config with short timeouts: with one voter
// nobody can miss a heartbeat, so short timeouts only speed up elections.
func fastConfig(nodeID, dir string) Config {
	return Config{
		NodeID:    nodeID,
		Dir:       dir,
		BindAddr:  "127.0.0.1:0",
		Bootstrap: true,
		Timing: Timing{HeartbeatTimeout: 50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond,
			LeaderLeaseTimeout: 25 * time.Millisecond, CommitTimeout: 5 * time.Millisecond},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// testSecret is the cluster secret of every test cluster of this package.
var testSecret = sync.OnceValues(trust.Generate)

// testIdentity issues node id's identity from testSecret.
func testIdentity(t testing.TB, id string) *trust.Identity {
	t.Helper()
	secret, err := testSecret()
	if err != nil {
		t.Fatal(err)
	}
	identity, err := trust.NewIdentity(secret, id)
	if err != nil {
		t.Fatal(err)
	}
	return identity
}

func memoryConfig(nodeID string) Config {
	cfg := fastConfig(nodeID, "")
	cfg.InMemory = true
	cfg.BindAddr = ""
	return cfg
}

// openLeader opens a store and waits until it leads and has applied every
// entry in its log.
func openLeader(t testing.TB, cfg Config, sm StateMachine) *Store {
	t.Helper()
	ctx := testContext(t)
	s, err := Open(ctx, cfg, sm)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.WaitForLeader(ctx); err != nil {
		t.Fatalf("WaitForLeader: %v", err)
	}
	if err := s.Barrier(ctx); err != nil {
		t.Fatalf("Barrier: %v", err)
	}
	return s
}

func mustPropose(t testing.TB, s *Store, data string) (any, uint64) {
	t.Helper()
	resp, index, err := s.Propose(testContext(t), []byte(data))
	if err != nil {
		t.Fatalf("Propose(%q): %v", data, err)
	}
	return resp, index
}

// recordingHandler keeps every log record, with the attributes added
// through With, so tests can look for messages.
type recordingHandler struct {
	mu      *sync.Mutex
	records *[]recordedLog
	attrs   []slog.Attr
	level   slog.Level
}

type recordedLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newRecordingHandler(level slog.Level) *recordingHandler {
	return &recordingHandler{mu: new(sync.Mutex), records: new([]recordedLog), level: level}
}

func (h *recordingHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= h.level }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.records = append(*h.records, recordedLog{level: r.Level, msg: r.Message, attrs: attrs})
	h.mu.Unlock()
	return nil
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	derived := *h
	derived.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &derived
}

func (h *recordingHandler) WithGroup(string) slog.Handler { return h }

func (h *recordingHandler) find(substring string) []recordedLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []recordedLog
	for _, r := range *h.records {
		if strings.Contains(r.msg, substring) {
			found = append(found, r)
		}
	}
	return found
}
