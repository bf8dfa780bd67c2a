// Package rejoin is the replicated state machine's module of channel rejoins: for an account (a
// DID) that asked for it by logging in on a node that rejoins, the channels its sessions were in
// when they ended, so that its next login, on any node of the cluster, joins them again.
//
// An account is followed from its first Claim, the command its gateway proposes when one of its
// sessions logs in: the Claim answers the channels to join (those remembered, unless older than
// the Claim's MaxAge, and those the account's other sessions are in now) and clears the
// remembered ones, which the new session carries from then on. While followed, a session of the
// account that ends adds its channels (SessionEndedIn) and one that parts a channel or is kicked
// from it forgets it (MemberLeft); renames are followed. An account's entry is dropped by a
// later Claim (of any account) once it is older than that Claim's MaxAge and the account has no
// session; at most MaxAccounts are followed (a new one evicts the longest untouched) and at most
// MaxChannels channels are remembered for one.
//
// The package owns that state (the snapshot section "rejoin"), its command type (91) and the
// read view Of, and registers itself with the core (fsm.Register) when the package loads. The
// command is of feature level 2: a cluster still running an earlier version refuses it, and
// logins there join nothing.
package rejoin
