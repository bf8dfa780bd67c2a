// Package coord owns the coordination models' rules at the edges: what an ACT or typed
// coordination TAGMSG must carry before it is filed (sender, event id, signature, venue), the
// FAIL TAGMSG codes of a refusal, the server's signed confirm receipts, the agent commands
// (PROVENANCE with FreeqBotDelegation/v1 certificates, AGENT REGISTER/MANIFEST/SPAWN, PRESENCE,
// HEARTBEAT), agent manifests (TOML or JSON), and the REST routes that read the models back:
// actions, tasks, manifests, spawned agents, channel capabilities and approvals, actor records
// and the audit timeline. The models themselves are replicated state (raft/fsm/coord*.go); the
// rules of an action's life are package act's.
package coord
