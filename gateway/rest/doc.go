// Package rest owns the JSON HTTP surface of a node: the gin engine every
// REST route hangs off, the behaviour common to all of them, and the read
// routes over the node's replica (channels, history, export, search,
// evidence, messages, topics, pins, users, actors), plus health, metrics,
// favourites, the protected-resource metadata, the WebSocket IRC endpoint
// and the OpenAPI contract document.
//
// On every response, errors and unknown paths included, it sets the
// security headers, the discovery Link header and the CORS headers; every
// 401 gets WWW-Authenticate and every 429 Retry-After. Errors under /api are
// the four-field Error object (WriteError); an error some handler writes in
// another type under /api (net/http's file server's text/plain 416) is
// replaced by it, and net/http's own answers before routing (a malformed
// percent-escape in the path, headers over the limit) are rewritten to it
// by SecurityHeadersListener. HEAD is answered on every route that has a GET
// and no HEAD of its own, in Handler: the GET handler runs, its status and
// headers are sent with the Content-Length of its body, the body is not.
// The header rules are applied by
// a gin middleware that wraps the response writer, so that they hold
// whether the lead serves Handler() or mounts more routes on Engine(). gin's
// automatic trailing-slash redirect is off because gin writes it before any
// middleware runs; routing uses the escaped path so that %2F stays inside a
// channel name.
//
// Reads come from three sources given in Config: the replicated state
// (channels, modes, members, topics, pins, sessions, nick ownership), the
// event store (messages in their current form, search) and a DID resolver
// (handles, PDS endpoints, verification keys). Read authorization follows
// freeq's authorize_channel_read: public channels are open, restricted ones
// (+i, +k, +E) need a bearer whose DID is a member's, the founder's or a DID
// op's, unknown channels are 404 and DM venues are never served. Paging by
// Unix seconds trims pages to whole seconds so that a walk returns every
// message once (see paging.go).
//
// The contract document is hand-written YAML (openapi.yaml, embedded);
// tests validate real responses against it with libopenapi-validator, and
// walk the route table so that no mounted route goes undescribed. The
// per-IP fixed-window rate limiter is hand-written because it is a few
// lines over a map, and must key clients by gin's ClientIP rule (freeq's
// proxy rule) and IPv6 /64s, which the limiter in golang.org/x/time does
// not do by itself.
//
// # The HTTP edge
//
// HTTPServer builds the node's http.Server: read, header and idle timeouts
// (HTTPLimits; a WebSocket clears the read deadline once upgraded, its
// session then bounded by the IRC server's pings), and a header size limit
// answered with a 431 Error object. SecurityHeadersListener adds the
// security headers to the answers net/http writes without a handler (400,
// 431 beyond net/http's own limit, 501, 505). The client IP is the TCP
// peer; X-Real-IP and X-Forwarded-For count only from Config.TrustedProxies,
// never from loopback by default. WebSocket IRC admits BaseURL's origin and
// the allowed list only, never an origin because it matches the request's
// Host (DNS rebinding), and pages on localhost at any port only when
// LocalWebSocketOrigins says the node itself is local.
package rest
