package irc

import (
	"io"
	"log/slog"
	"time"
)

// unitConfig is the configuration of the edges that unit tests build without a node: the
// timings and budget of node.DefaultConfig, a quiet logger, server irc.test.
func unitConfig(sendQBytes int) Config {
	return Config{ServerName: "irc.test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		SendQBytes: sendQBytes, PingAfter: 30 * time.Second, PingTimeout: 60 * time.Second, KeySweepEvery: time.Minute}
}
