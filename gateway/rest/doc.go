// Package rest owns the JSON HTTP surface of a node: the gin engine every
// REST route hangs off, the behaviour common to all of them, and the read
// routes over the node's replica (channels, history, export, search,
// evidence, messages, topics, pins, users, actors), plus health, metrics,
// favourites, the protected-resource metadata, the WebSocket IRC endpoint
// and the OpenAPI contract document.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package rest
