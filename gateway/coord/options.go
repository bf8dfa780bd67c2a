package coord

import (
	"flag"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Options configure the coordination surface.
type Options struct {
	// MaxManifestBytes bounds an agent manifest (TOML or JSON), at most fsm.MaxManifestBytes.
	MaxManifestBytes int
	// DefaultHeartbeatTTL is the TTL (seconds) of a HEARTBEAT that names none.
	DefaultHeartbeatTTL int
}

// Defaults returns the default options.
func Defaults() Options {
	return Options{MaxManifestBytes: fsm.MaxManifestBytes, DefaultHeartbeatTTL: 60}
}

// Flags declares the options' flags on fs, with the options' current values as defaults.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxManifestBytes, "agent-manifest-max-bytes", o.MaxManifestBytes,
		"largest agent manifest (TOML or JSON) accepted, in bytes (at most 16384)")
	fs.IntVar(&o.DefaultHeartbeatTTL, "agent-heartbeat-ttl", o.DefaultHeartbeatTTL,
		"seconds a HEARTBEAT that names no ttl counts as healthy")
}

// normalized clamps the options to what the replicated state accepts.
func (o Options) normalized() Options {
	d := Defaults()
	if o.MaxManifestBytes <= 0 || o.MaxManifestBytes > fsm.MaxManifestBytes {
		o.MaxManifestBytes = d.MaxManifestBytes
	}
	if o.DefaultHeartbeatTTL <= 0 || o.DefaultHeartbeatTTL > fsm.MaxHeartbeatTTL {
		o.DefaultHeartbeatTTL = d.DefaultHeartbeatTTL
	}
	return o
}
