// Package raft owns the cluster control plane of a node: its
// hashicorp/raft instance (log, stable and snapshot stores, transport,
// bootstrap, proposing and waiting for entries to apply), its gossip
// membership (hashicorp/memberlist), the cluster RPC that followers use to
// reach the leader, and the leader-only jobs, reconciliation of the raft
// configuration with gossip among them. It is the only package that imports
// hashicorp/raft (with raft/rafttest, which plays an outsider against these
// planes in tests); the deterministic state machine lives in raft/fsm and is
// seen here only through the StateMachine interface.
//
// # Who is in the cluster
//
// Every plane between nodes is authenticated and encrypted with the cluster
// identity of Config.Identity (raft/trust: the node's credentials, which hold
// its key, its certificate naming its node id, and the cluster's CA
// certificates and gossip keys, but no CA key):
//
//   - raft runs hashicorp/raft's NetworkTransport over a TLS stream layer
//     (tls.go): the listener requires a client certificate of the cluster,
//     the dialer accepts only a server certificate of the cluster; ALPN
//     "palaver-raft". raft's transport itself keeps the heartbeat gate below.
//   - memberlist encrypts and authenticates every packet and stream with the
//     gossip keys (GossipVerifyIncoming and GossipVerifyOutgoing), so a
//     process without a key can neither join nor read gossip. Members
//     announce which keys they hold (fingerprints), and each node encrypts
//     with the newest key all live members hold; a joining node tries its
//     keys in turn. The cluster id in the metadata still tells clusters apart
//     but is no longer what keeps outsiders away.
//   - the cluster listener (ClusterAddr) is mutual TLS too, and dispatches
//     by ALPN: "palaver-rpc" to the cluster RPC, "http/1.1" to the cluster's
//     HTTP plane (ClusterHTTPListener, ClusterHTTPClient), which the node
//     layer uses for the event exchange. The caller of the RPC and of the
//     HTTP plane is the node its certificate names, and it must be a server
//     of the current raft configuration (ClusterPeer); what a request says
//     about its sender is not trusted. A third protocol, "palaver-operator", is the
//     operator plane (operator.go): no client certificate, but a signature of the TLS
//     session's exported keying material by a CA key of the secret, which no node
//     holds, before any call.
//
// Holding the secret file is what lets a process enrol as a node of the
// cluster; the raft configuration then decides which nodes may propose, and
// Config.NodeKeys which key each of them must hold: the leader pins every
// server of the configuration to the key of the certificate it presents (it
// connects to its cluster listener to read it), pins itself, and unpins the
// nodes that left the configuration, in each reconcile pass (pins.go). From
// then on the TLS configurations refuse a certificate that names a pinned
// node for another key, on the Raft transport, the cluster RPC and the HTTP
// plane alike, even one the cluster's CA signed: a holder of the secret can
// add a node of a new name, not pose as an existing one. A server not yet
// pinned (between its addition and the next pass) is accepted on its
// certificate's chain. The leader pins only once every server announces in
// gossip that it keeps pins, so a rolling upgrade never sends a node of the
// previous version a command it would stop at. A node that is
// not clustered has no peers and opens no port at all: its raft transport is
// an in-memory one named by BindAddr.
//
// # Storage
//
// On disk, <Dir>/raft-log.db (raft-boltdb/v2) is both the log and the stable
// store, with an in-memory cache of the newest entries in front of the log;
// <Dir>/snapshots is a file snapshot store keeping two snapshots. InMemory
// swaps all of it for raft's in-memory versions. The first start writes
// <Dir>/node-id before any raft state exists, and later starts refuse a
// directory whose id differs, or which has raft state but no id, so a node
// cannot silently adopt another node's log. The stable store also holds the
// cluster id (below).
//
// # Joining, and why gossip first
//
// As in Consul and rqlite, a node bootstraps only when alone: Join empty,
// Bootstrap set and no raft state. It then writes a configuration with
// itself as the only voter and a fresh random cluster id. Bootstrapping
// twice would fork the cluster's history, so every later start skips it.
//
// With Join set, the node starts memberlist and merges state with any seed
// before raft runs. memberlist's name-conflict callback reveals a live
// member that already has this node's name (ErrDuplicateNodeName), and the
// seeds' gossiped metadata carries their cluster id: a node without one
// adopts it, a node whose stored id differs stops with ErrClusterMismatch.
// Checking before raft starts means a node of another cluster never sends
// a vote request that would disturb this one. A node without state that
// reaches no seed within JoinTimeout fails with ErrJoinFailed; a node with
// state (a restart) starts anyway, since its peers are in its
// configuration, and keeps retrying the seeds while it sees no member.
//
// Each node gossips its raft and cluster RPC addresses, its cluster id and
// the caller's opaque Meta. It announces the cluster id only once its raft
// runs, because that announcement is what lets the leader add it.
//
// # Reconcile
//
// The leader runs a reconcile pass at every gossip or configuration change
// and on a timer. It adds live members of its cluster missing from the
// configuration, always as non-voters, and updates the address of a member
// that came back at a new one; it pins keys (above). It promotes a non-voter only when it is
// healthy and has stayed healthy for StabilizationTime (default 2s; the
// autopilot rule of Consul): it answers a status call of the cluster RPC
// addressed to its own id, follows this leader, has applied the log up to
// where this leader first saw it as a member, and trails the leader's
// applied index by at most 128 entries. So a member that announces itself
// in gossip but never answers stays a non-voter, which counts towards no
// quorum: a join cannot take a one-node cluster's quorum away. Promotion
// fills the voters up to MaxVoters; a voter that gossip reports dead is
// swapped for a healthy, stable non-voter (promote first, then demote, so
// the live voter count never drops). Servers that stayed dead, or never
// appeared in its gossip, for longer than DeadNodeGrace are removed, and
// OnNodeRemoved lets the node layer purge their sessions. The leader never
// removes itself, and it warns when the cluster settles on two voters.
// hashicorp/raft-autopilot was not used: it owns the whole membership loop
// (server list, removal, promotion) where this one is driven by gossip.
// memberlist forgets dead nodes and does not say since when they are dead,
// so each node keeps its own record of members and their last change; and
// because memberlist never probes a dead node, each node also asks dead
// members to merge state again now and then, which is how the two sides of
// a healed partition find each other. Raft runs with ShutdownOnRemove off
// so that a node removed while cut off can be added back when it returns.
//
// # Leader jobs
//
// OnLeadership jobs start when this node becomes leader, after a barrier
// (so they see every entry committed before), and are cancelled when it
// loses leadership or closes; the next term's jobs start only after the
// previous ones returned. Reconcile is one of them.
//
// # Propose, forward and the applied index
//
// On the leader, Propose hands the entry to raft and waits on its future,
// which raft answers only after this node's FSM applied it. On a follower
// it forwards the entry to the leader over the cluster RPC; the leader
// answers with the entry's index once committed and applied there, and the
// follower then waits until ITS OWN state machine applied that index and
// returns its own response for it, so the user reads their own write on the
// node they talk to. The FSM adapter keeps the responses of the last 4096
// applied entries by index for this, because the follower often applies the
// entry before the leader's answer arrives. If the response is gone (the
// follower installed a snapshot instead), the entry is proposed again and
// the state machine answers the repeated request id with the recorded
// result. A forwarded idle write waits one CommitTimeout for the leader to
// tell the followers about the commit, which is why that default is 10ms.
//
// When the leader is unknown, changes, loses leadership before the entry
// commits, or its answer is lost, Propose retries with backoff until ctx
// ends. A retry may commit the same entry twice; every command carries a
// request id that raft/fsm remembers (the last 4096), so it applies once.
// A context deadline becomes raft's enqueue timeout (10 s without one), and
// the context bounds the wait for commit, because raft's timeout does not.
//
// The FSM adapter records the index of every entry it applies (commands and
// configuration changes) and wakes WaitApplied callers whose index it
// passed. raft's own AppliedIndex is not used for this because raft advances
// it when it hands entries to the FSM goroutine, before they are applied.
// raft does not tell FSM.Restore which index a snapshot covers, so the
// adapter writes the applied index in a small header at the start of every
// snapshot and puts it back on restore.
//
// # Reads
//
// Local reads may lag. ReadIndex makes them linearizable from any node
// without writing to the log: the leader reads its commit index, confirms
// it is still leader with a heartbeat round (VerifyLeader), and hands out
// the last command or configuration index at or below the commit index
// (no-op and barrier entries never reach the state machine, so the applied
// index can stop short of them). A follower gets that index over the
// cluster RPC and waits until it applied it. A leader that has not yet
// committed an entry of its own term, or whose log around the commit index
// is compacted, uses a barrier instead. Barrier itself stays leader-only.
//
// # Cluster RPC
//
// A small request/response protocol over the cluster listener's TLS: each
// message is a 4-byte big-endian length (at most 16 MiB, checked before the
// body is read) and a JSON object (see rpc.go); the calls are propose,
// read_index and the leader's status probe of non-voters; calls carry the
// caller's cluster id, node and deadline, answers an index or an error code
// (not_leader with the leader's id, leadership_lost, closed, timeout,
// cluster_mismatch, forbidden, bad_request). A connection carries one call at a time
// and the client keeps a few idle ones per address. net/rpc was not used:
// gob is Go-only and it has no per-call deadline.
//
// # In-process clusters
//
// Config.Network (NewInmemNetwork) wires raft's in-memory transports, an
// in-process memberlist transport and in-process pipes for the cluster
// listener together, and can partition and heal pairs of nodes. With an
// Identity the cluster listener runs the same mutual TLS over those pipes
// (so a partition cuts the cluster RPC and the cluster's HTTP plane alike)
// and gossip is encrypted as over UDP and TCP; raft's in-memory transport
// stays as it is: it faces no network. memberlist.MockNetwork was not used:
// it cannot partition, its address maps are unsafe when a node joins while
// others gossip, and a packet to a stopped node blocks the sender forever.
// With Dir set instead of InMemory such nodes keep their state across
// restarts, for kill-and-restart tests.
//
// On restart the newest snapshot is restored inside Open; entries after it
// are replayed once a leader has committed a new entry, so callers that need
// the full state call WaitForLeader and then ReadIndex (or Barrier on the
// leader).
package raft
