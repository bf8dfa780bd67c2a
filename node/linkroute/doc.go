// Package linkroute decides where a change to a channel linked with a peer server goes, once for
// every surface: to this server's Raft log (the caller proposes it, as for any channel), to the
// channel's home server as a request (a topic, the modes that cross a link, a pin or unpin, when
// the home is the peer), or to the peer whose user it names (a kick or invite of a user of the
// peer, whichever side is the home).
//
// Service is the one implementation, built over federation/peering's Federation (nil: no peer
// servers, every change is this server's). A request is checked first against this server's own
// state (the actor must be an operator here, or may set an unlocked topic), then sent, and its
// outcome is one of this package's errors: ErrNotOperator, a *RefusedError from the peer,
// ErrLinkDown. An accepted request changes nothing here yet: the home's answer arrives as a change
// of its state, which the peering plug-in applies through Raft.
//
// An edge depends on the Router interface and this package's types only, never on peering's:
// the IRC edge does (gateway/irc/federation.go); REST has no route that changes a channel's
// topic, modes, pins or members, and would ask the same Router if it had one.
package linkroute
