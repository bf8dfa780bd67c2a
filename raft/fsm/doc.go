// Package fsm owns Palaver's replicated control-plane state and the deterministic state machine that
// changes it: sessions and the nicks they hold, nick ownership by DID, channels with their members,
// modes, topics, ban, ban-exception and invite-exception lists, invites, DID operators and
// founders, and small per-DID settings such as favourites.
//
// How it works and why: DESIGN.md beside this file.
package fsm
