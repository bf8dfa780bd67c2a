// Package trust owns the identity of a cluster and of each node in it: the cluster secret file
// (the cluster's certificate authorities and gossip keys), the short-lived node certificates a
// node issues itself from it, and the TLS configurations every plane between nodes uses (Raft,
// the cluster RPC and the cluster's HTTP plane), which accept only peers holding a certificate
// of the cluster and tell who they are.
//
// # The secret file
//
// A cluster secret is a PEM file, mode 0600, of these blocks in this order:
//
//	PALAVER CLUSTER CA          a CA certificate (DER); the first one is the primary
//	PALAVER CLUSTER CA KEY      the PKCS #8 private key of the CA certificate just before it
//	PALAVER CLUSTER CA CROSS    the primary CA certificate signed by an older CA (rotation)
//	PALAVER GOSSIP KEY          a 32-byte AES-256 memberlist key; the first one is the newest
//
// The primary CA must come with its key: it signs the node certificates. Other CAs are trusted
// (a peer's certificate chaining to any of them is accepted). CAs are ECDSA P-256. Whoever holds
// the file can join the cluster: it is the join secret, and the CA key never leaves it (nodes
// keep their own certificates in memory).
//
// # Node certificates
//
// Each node issues itself a certificate from the primary CA at start, valid for a week and
// renewed in memory a day before it ends, naming the node by a URI SAN palaver-node:<node id>
// (and its common name). Both ends of every connection present one; a connection is accepted
// when the peer's chain leads to a CA of the file, and the peer's node id is read from its
// certificate, never from anything it says over the connection. Host names are not checked:
// nodes are known by id, not by address.
//
// # Rotation
//
// Rotate adds a new primary CA and a new gossip key and keeps the old ones; the new CA is also
// cross-signed by the old one, and nodes present that cross certificate with their own, so a
// node still holding only the old file accepts the certificates of nodes holding the new one.
// Retire drops every CA, cross certificate and gossip key but the newest. A rotation is: rotate,
// give the file to every node, restart them one by one; retire, give that file to every node,
// restart them one by one. The gossip layer encrypts with the newest key every live member
// holds (members announce which keys they hold, by fingerprint), so a cluster mid-rotation keeps
// gossiping.
package trust
