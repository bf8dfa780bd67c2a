package raft

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogAdapterLevels(t *testing.T) {
	tests := []struct {
		name      string
		handler   slog.Level
		setLevel  hclog.Level
		log       func(hclog.Logger)
		wantLevel slog.Level
		wantSeen  bool
	}{
		{"info passes", slog.LevelInfo, hclog.NoLevel, func(l hclog.Logger) { l.Info("m") }, slog.LevelInfo, true},
		{"warn maps", slog.LevelInfo, hclog.NoLevel, func(l hclog.Logger) { l.Warn("m") }, slog.LevelWarn, true},
		{"error maps", slog.LevelInfo, hclog.NoLevel, func(l hclog.Logger) { l.Error("m") }, slog.LevelError, true},
		{"debug below handler level", slog.LevelInfo, hclog.NoLevel, func(l hclog.Logger) { l.Debug("m") }, 0, false},
		{"trace maps below debug", slogLevelTrace, hclog.NoLevel, func(l hclog.Logger) { l.Trace("m") }, slogLevelTrace, true},
		{"SetLevel filters", slog.LevelDebug, hclog.Warn, func(l hclog.Logger) { l.Info("m") }, 0, false},
		{"Off drops everything", slog.LevelDebug, hclog.Off, func(l hclog.Logger) { l.Error("m") }, 0, false},
		{"Log with NoLevel is info", slog.LevelInfo, hclog.NoLevel, func(l hclog.Logger) { l.Log(hclog.NoLevel, "m") }, slog.LevelInfo, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newRecordingHandler(tt.handler)
			logger := newHCLogAdapter(slog.New(h))
			if tt.setLevel != hclog.NoLevel {
				logger.SetLevel(tt.setLevel)
			}
			tt.log(logger)
			found := h.find("m")
			if seen := len(found) == 1; seen != tt.wantSeen {
				t.Fatalf("seen = %v, want %v", seen, tt.wantSeen)
			}
			if tt.wantSeen && found[0].level != tt.wantLevel {
				t.Fatalf("slog level = %v, want %v", found[0].level, tt.wantLevel)
			}
		})
	}
}

func TestHCLogAdapterNamesAndArgs(t *testing.T) {
	h := newRecordingHandler(slog.LevelDebug)
	root := newHCLogAdapter(slog.New(h))
	logger := root.Named("raft").With("peer", "b").Named("snapshot")
	logger.Info("taking snapshot", "index", 7)

	if got := logger.Name(); got != "raft.snapshot" {
		t.Fatalf("Name = %q", got)
	}
	if got := logger.ImpliedArgs(); len(got) != 2 || got[0] != "peer" || got[1] != "b" {
		t.Fatalf("ImpliedArgs = %v", got)
	}
	found := h.find("taking snapshot")
	if len(found) != 1 {
		t.Fatalf("found %d records", len(found))
	}
	want := map[string]string{"component": "raft.snapshot", "peer": "b", "index": "7"}
	for key, value := range want {
		if found[0].attrs[key] != value {
			t.Fatalf("attr %s = %q, want %q (all: %v)", key, found[0].attrs[key], value, found[0].attrs)
		}
	}
	if !logger.IsInfo() || logger.IsTrace() {
		t.Fatalf("IsInfo=%v IsTrace=%v with a debug handler", logger.IsInfo(), logger.IsTrace())
	}
	root.SetLevel(hclog.Error) // shared with derived loggers, as in hclog
	if logger.IsWarn() || logger.GetLevel() != hclog.Error {
		t.Fatalf("SetLevel on the root did not reach a derived logger")
	}

	logger.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("from std")
	if found := h.find("from std"); len(found) != 1 || found[0].level != slog.LevelError {
		t.Fatalf("standard logger records = %+v", found)
	}
}
