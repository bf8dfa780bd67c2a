package raft

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// memberlistLogWriter turns memberlist's "[LEVEL] memberlist: message"
// lines into slog records. memberlist only takes a *log.Logger, so the
// level has to be read back out of the text.
type memberlistLogWriter struct{ logger *slog.Logger }

func newMemberlistLogger(logger *slog.Logger) *log.Logger {
	return log.New(memberlistLogWriter{logger: logger.With("component", "memberlist")}, "", 0)
}

func (w memberlistLogWriter) Write(p []byte) (int, error) {
	level, msg := parseMemberlistLine(string(p))
	if w.logger.Enabled(context.Background(), level) {
		w.logger.Log(context.Background(), level, msg)
	}
	return len(p), nil
}

// parseMemberlistLine splits "[WARN] memberlist: text" into a level and
// "text". Lines without a known level are logged at Info.
func parseMemberlistLine(line string) (slog.Level, string) {
	line = strings.TrimRight(line, "\r\n")
	level := slog.LevelInfo
	if rest, ok := strings.CutPrefix(line, "["); ok {
		if tag, text, found := strings.Cut(rest, "]"); found {
			known := true
			switch tag {
			case "TRACE", "DEBUG":
				level = slog.LevelDebug
			case "INFO":
				level = slog.LevelInfo
			case "WARN":
				level = slog.LevelWarn
			case "ERR", "ERROR":
				level = slog.LevelError
			default:
				known = false
			}
			if known {
				line = strings.TrimSpace(text)
			}
		}
	}
	line = strings.TrimPrefix(line, "memberlist: ")
	return level, line
}
