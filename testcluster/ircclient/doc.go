// Package ircclient is a small IRC client for Palaver's black-box tests, the
// `palaver login` command and the load generator. It owns the client side of
// the wire: dialling over TCP, TLS or WebSocket, reading parsed lines with a
// bounded history, capability negotiation and registration, and the SASL
// ATPROTO-CHALLENGE login that yields the REST bearer token, together with
// the did:key signers that login needs.
//
// It is test and tool code, kept under testcluster rather than gateway/ (which
// holds the server edges only); no server package imports it outside tests.
//
// It is hand-written rather than built on an IRC client library because its
// users need byte-level control of what is sent (tests provoke errors on
// purpose) and must observe every line the server sends, in order.
package ircclient
