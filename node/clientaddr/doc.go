// Package clientaddr owns the one rule by which a client is counted from its network address, for
// every per-client limit of the server (the IRC and HTTP connection caps, the HTTP request rates,
// OPER failures, DID resolutions): an IPv4 address counts by itself (a /32), an IPv6 address by
// its /64, one subscriber's usual allocation, which hands out its 2^64 addresses freely.
// IPv4-mapped IPv6 addresses count as IPv4, and an IPv6 zone is ignored.
package clientaddr
