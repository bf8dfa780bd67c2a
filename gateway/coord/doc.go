// Package coord owns the coordination models' rules at the edges: what an ACT or typed
// coordination TAGMSG must carry before it is filed (sender, event id, signature, venue), the
// FAIL TAGMSG codes of a refusal, the server's signed confirm receipts (one id and signature:
// the receipt filed in the state is the TAGMSG the channel gets), the agent commands
// (PROVENANCE with FreeqBotDelegation/v1 certificates, AGENT REGISTER/MANIFEST/SPAWN/DESPAWN,
// PRESENCE, HEARTBEAT), agent manifests (TOML or JSON), and the REST routes that read the models
// back: actions, tasks, manifests, spawned agents, channel capabilities and approvals, actor
// records, the coordination events (freeq's shape) and the audit timeline. Typed event payloads
// are filed percent-decoded. The models themselves are replicated state (the raft/fsm/coord module),
// where ownership is enforced: a task moves on only by its requester or assignee, an agent is
// despawned only by its parent, and one DID spawns a bounded number; the rules of an action's
// life are package act's. PlugIRC puts the surface on the IRC edge through its seams (verbs, the
// message check, JOIN tags) and files relayed coordination TAGMSGs from the Stored stream (irc.go).
package coord
