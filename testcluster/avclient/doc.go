// Package avclient is a WebRTC call participant for tests and load: a pion peer connection that
// answers the forwarding unit's offers, publishes synthetic VP8 and Opus samples, and counts what
// it receives per publisher. It speaks the signalling of package sfu, directly (Handle) or over
// the signalling WebSocket of a node (Dial).
package avclient
