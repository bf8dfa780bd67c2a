// Package nodetest starts real nodes for the tests of packages other than node (whose own tests
// keep startNode, as they cannot import a package that imports node): one node of
// node.LoopbackConfig with its data in the test's temporary directory, closed when the test ends.
// Set PALAVER_TEST_LOG to see its debug log.
package nodetest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
)

// StartTimeout bounds a node's start: a leader elected, the log applied, its key registered.
const StartTimeout = time.Minute

// Start starts a node of node.LoopbackConfig changed by mutate (which may be nil), and closes it
// when tb ends.
func Start(tb testing.TB, mutate func(*node.Config)) *node.Node {
	tb.Helper()
	cfg := node.LoopbackConfig(tb.TempDir())
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	n, err := node.Start(ctx, cfg, Logger())
	if err != nil {
		tb.Fatalf("start node: %v", err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// Logger is the log of nodes started for tests: errors only, everything with PALAVER_TEST_LOG set.
func Logger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("PALAVER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
