package coord

import (
	"flag"
	"time"

	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// Options configure the coordination surface.
type Options struct {
	// MaxManifestBytes bounds an agent manifest (TOML or JSON), at most fsmcoord.MaxManifestBytes.
	MaxManifestBytes int
	// DefaultHeartbeatTTL is the TTL (seconds) of a HEARTBEAT that names none.
	DefaultHeartbeatTTL int
	// ActSweepEvery is how often the leader expires the offers whose deadline passed; 0 never.
	ActSweepEvery time.Duration
}

// Defaults returns the default options.
func Defaults() Options {
	return Options{MaxManifestBytes: fsmcoord.MaxManifestBytes, DefaultHeartbeatTTL: 60, ActSweepEvery: 30 * time.Second}
}

// Flags declares the options' flags on fs, with the options' current values as defaults.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxManifestBytes, "agent-manifest-max-bytes", o.MaxManifestBytes,
		"largest agent manifest (TOML or JSON) accepted, in bytes (at most 16384)")
	fs.IntVar(&o.DefaultHeartbeatTTL, "agent-heartbeat-ttl", o.DefaultHeartbeatTTL,
		"seconds a HEARTBEAT that names no ttl counts as healthy")
	fs.DurationVar(&o.ActSweepEvery, "act-sweep-every", o.ActSweepEvery,
		"how often the leader expires ACT offers whose deadline passed (0 never)")
}

// normalized clamps the options to what the replicated state accepts.
func (o Options) normalized() Options {
	d := Defaults()
	if o.MaxManifestBytes <= 0 || o.MaxManifestBytes > fsmcoord.MaxManifestBytes {
		o.MaxManifestBytes = d.MaxManifestBytes
	}
	if o.ActSweepEvery < 0 {
		o.ActSweepEvery = 0
	}
	if o.DefaultHeartbeatTTL <= 0 || o.DefaultHeartbeatTTL > fsmcoord.MaxHeartbeatTTL {
		o.DefaultHeartbeatTTL = d.DefaultHeartbeatTTL
	}
	return o
}
