// Package peering owns federation between independent Palaver servers: the configured servers of
// the exchange's allow-list (exchange.AllowList, with their trust levels), the channels linked
// with each, the rules that say which of this node's rows go to which server, the checks that
// keep a lying peer from changing anything it has no right to, the peers' server keys, and the
// authority plug-in (linked channels' state, requests and answers, presence) with its signed
// envelopes, which carry that authority only. The rows themselves (messages, deletes, reactions)
// travel on the exchange's stream alone: Federation is the exchange's Servers plug-in (plane.go).
// Which changes of a linked channel go to the home is node/linkroute's decision, over this.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package peering
