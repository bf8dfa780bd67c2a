// Package rest owns the HTTP server base of the gateway: the gin engine
// every REST route hangs off, and the behaviour common to all of them.
//
// On every response, errors and unknown paths included, it sets the
// security headers, the discovery Link header and the CORS headers; every
// 401 gets WWW-Authenticate and every 429 Retry-After. Errors under /api are
// the four-field Error object (WriteError). It also serves the routes that
// need nothing else: health, metrics, the protected-resource metadata, the
// WebSocket IRC endpoint and the bearer-protected favorites.
//
// The header rules are applied by a gin middleware that wraps the
// response writer, so that they hold whether the lead serves Handler() or
// mounts more routes on Engine(). gin's automatic trailing-slash redirect
// is off because gin writes it before any middleware runs.
package rest
