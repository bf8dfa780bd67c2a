// Package coord is the replicated state machine's coordination module: ACT actions with their
// transition history (rules and checker in package act), delegated tasks from typed coordination
// events, agent manifests, spawned agents, channel capability grants and approvals, actor records
// (class, delegation, presence, heartbeat) and each venue's audit timeline. It owns their state
// (the snapshot section "coord"), their command types (60–79), their result codes (50–70) and
// the read view Of; it registers itself with the core (fsm.Register) when the package loads.
// Every node answers the same from its replica: the proposer stamps every time, and act verdicts
// take their clock from the event's own ULID.
package coord
