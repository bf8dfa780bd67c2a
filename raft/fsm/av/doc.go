// Package av is the replicated state machine's module of calls in channels (AV sessions): which
// node hosts a channel's call, who is in its roster, its artifacts, and when it started and
// ended. The media itself never enters the log: it flows through the forwarding unit of the
// hosting node (gateway/av). One active call per channel; ended calls are kept (the newest
// MaxRecentAVCalls) for the session routes. It owns that state (the snapshot section "av"), its
// command types (50–56), result codes (40–45), event kinds (50–53) and the read view Of; it
// registers itself with the core (fsm.Register) when the package loads.
package av
