// Package confusable owns the look-alike rule for nicks: UTS #39 skeletons
// (github.com/mtibben/confusables, Unicode confusables.txt) and an index, over the replicated
// state, of the nicks a new nick may not be mistaken for — every nick in use by a session (guests
// included, on every node) and every nick owned by a DID. The IRC edge refuses such a nick on
// NICK; federation refuses a peer's user that uses one. The index follows the state change by
// change through the FSM's journal of nick changes (fsm.State.NickChangesSince), and rebuilds
// from every session and owned nick only when the journal cannot bring it up to date.
//
// A skeleton is computed on the nick as given and on its lower-case form, and both are compared: a
// capital I looks like a lower-case l before lower-casing ("paypaI" and "paypal"), a Cyrillic
// capital І like an i only after ("VІCTIM" and "victim").
package confusable
