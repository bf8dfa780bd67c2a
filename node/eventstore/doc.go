// Package eventstore owns a node's durable copy of chat events: messages, their edits and their soft
// deletes, each stored once by msgid, with the history views (CHATHISTORY, REST paging, export) and
// the full-text search that the gateways serve from it.
//
// How it works and why: DESIGN.md beside this file.
package eventstore
