package raft

import (
	"context"
	"io"
	"log"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// slogLevelTrace is below slog's Debug, where hclog's Trace lands.
const slogLevelTrace = slog.LevelDebug - 4

// hclogAdapter lets hashicorp/raft log through log/slog. It is hand-written
// because the only published adapters are separate modules (hclog's own
// hclogslog goes the other way, slog over hclog) and the whole job is a
// level mapping.
type hclogAdapter struct {
	root    *slog.Logger // without name or implied arguments
	logger  *slog.Logger // root with the component name and implied arguments
	name    string
	implied []any
	// level filters on top of the slog handler's own level; shared by every
	// logger derived through With and Named, as in hclog.
	level *atomic.Int32
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHCLogAdapter(logger *slog.Logger) *hclogAdapter {
	level := new(atomic.Int32)
	level.Store(int32(hclog.Trace))
	return &hclogAdapter{root: logger, logger: logger, level: level}
}

// derive returns a copy with a new name and implied arguments.
func (a *hclogAdapter) derive(name string, implied []any) *hclogAdapter {
	derived := *a
	derived.name = name
	derived.implied = implied
	derived.logger = a.root
	if name != "" {
		derived.logger = derived.logger.With("component", name)
	}
	if len(implied) > 0 {
		derived.logger = derived.logger.With(implied...)
	}
	return &derived
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slogLevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // NoLevel, Info
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	if level == hclog.Off || (level != hclog.NoLevel && level < hclog.Level(a.level.Load())) {
		return false
	}
	return a.logger.Enabled(context.Background(), slogLevel(level))
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if !a.enabled(level) {
		return
	}
	a.logger.Log(context.Background(), slogLevel(level), msg, args...)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	return a.derive(a.name, append(append([]any(nil), a.implied...), args...))
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

// ResetNamed replaces the name, which is logged as a "component" attribute
// rather than a message prefix so that it can be filtered on.
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return a.derive(name, a.implied)
}

func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level.Store(int32(level)) }

func (a *hclogAdapter) GetLevel() hclog.Level { return hclog.Level(a.level.Load()) }

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = slogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(a.logger.Handler(), level)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(opts).Writer()
}
