// Package trust owns the identity of a cluster and of each node in it: the cluster secret file
// (the cluster's certificate authorities and gossip keys), each node's credentials (its own key
// and the certificate a CA of the cluster issued for it when it enrolled), and the TLS
// configurations every plane between nodes uses (Raft, the cluster RPC and the cluster's HTTP
// plane), which accept only peers holding a certificate of the cluster, pinned to their key once
// the cluster knows it, and tell who they are.
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
// the file can enrol a node: it is the join secret. Nodes do not keep it: a node needs it only to
// enrol (its first start, and the first start after a rotation), and runs on its credentials.
//
// # Node credentials
//
// A node enrols (Enrol) by making its own ECDSA P-256 key, once, and having the secret's primary
// CA issue a certificate for it, valid until the CA ends, naming the node by a URI SAN
// palaver-node:<node id> (and its common name). It keeps both, with the secret's CA certificates,
// cross certificates and gossip keys but none of its CA keys, in its credentials file (a PEM file,
// mode 0600: PALAVER NODE KEY, PALAVER NODE CERTIFICATE, then the public blocks of the secret).
// The CA key is used in memory during enrolment only, so a node's disk lets its holder be that
// node and no other: it cannot issue a certificate. Starting again with a rotated secret issues a
// certificate from the new primary CA for the same key.
//
// Both ends of every connection present their certificate; a connection is accepted when the
// peer's chain leads to a CA the node trusts, and the peer's node id is read from its
// certificate, never from anything it says over the connection. Host names are not checked:
// nodes are known by id, not by address.
//
// # Pinned keys
//
// A CA signature binds a name to a key only as far as the CA's holders are trusted, and every
// holder of the secret can issue a certificate for any name. So the cluster also pins each node
// to its key (the SHA-256 of its SubjectPublicKeyInfo, KeySum) in its replicated state, and
// SetPins has Verify refuse a certificate that names a pinned node for another key. raft's leader
// pins the servers of its configuration and unpins the nodes that leave it; a node not pinned
// yet (just added) is accepted on its chain.
//
// # The operator's proof
//
// The operator plane (raft's operator.go) takes the secret's CA keys as the operator's
// credential: SignOperator signs a TLS session's exported keying material with each CA key of the
// file, a node checks one signature against the CA certificates it trusts (VerifyOperator), and
// the operator checks the node's certificate against the file's CAs (VerifyNode). Nodes hold no
// CA key, so their credentials cannot make the proof.
//
// # Rotation
//
// Rotate adds a new primary CA and a new gossip key and keeps the old ones; the new CA is also
// cross-signed by the old one, and nodes present that cross certificate with their own, so a
// node still holding only the old file accepts the certificates of nodes holding the new one.
// Retire drops every CA, cross certificate and gossip key but the newest. A rotation is: rotate,
// restart the nodes one by one with the file (each enrols again: a certificate from the new CA for
// its key, and the new trust in its credentials); retire, restart them one by one with that file. The gossip layer encrypts with the newest key every live member
// holds (members announce which keys they hold, by fingerprint), so a cluster mid-rotation keeps
// gossiping.
package trust
