// Package signingapi owns the HTTP routes about signing keys and signatures: the node's own key
// (GET /api/v1/signing-key and its did:web document at /.well-known/did.json), the keys filed
// under a DID (GET /api/v1/signing-keys/{did}, /{did}/{kid} and the batch ?keys= route), message
// verification (GET /api/v1/verify/{msgid}), key retirement by its owner (POST
// /api/v1/devices/sign-out), and the evidence bundles behind /api/v1/channels/{name}/evidence.
//
// It reads keys from the replicated state (raft/fsm) and messages from the node's event store,
// rebuilds canonical documents with federation/signing, and files keys it learns from did:web
// documents through Raft, so every node answers the same. The private server key is used only
// to seal evidence bundles; it is never serialized.
package signingapi
