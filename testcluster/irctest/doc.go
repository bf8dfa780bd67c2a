// Package irctest owns the helpers of Palaver's black-box IRC tests: dialling a node over TCP, TLS
// or WebSocket, registering and logging in, sending lines, and waiting for the lines a test
// expects (by command and parameters, by sender, up to a PING fence, whole batches), each failing
// the test with the last lines seen. It speaks to a node only through its addresses, its HTTP API
// and its replicated state machine, and imports no node, so the tests of package node and the
// external tests beside gateway/irc (which start nodes through testcluster/nodetest) share it.
package irctest
