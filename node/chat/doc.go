// Package chat owns the rules of chat messages that more than one surface applies: whether a
// message may be sent to a channel (Check, which also answers "would it be accepted?" without
// sending, for tools that advise a sender), and whether an event made elsewhere — on another
// node of the cluster or on a federated server — is accepted here (AcceptDeletion). The IRC edge
// keeps the protocol (parsing, capabilities, the per-connection pipeline, numerics, rendering);
// the exchange and federation keep their wire formats and transport; the rules live here once.
//
// The package reads the replicated state through the small State interface and the event store
// through Store; it imports no gateway and no federation transport.
package chat
