// Package signingapi owns the HTTP routes about signing keys and signatures: the node's own key
// (GET /api/v1/signing-key and its did:web document at /.well-known/did.json), the keys filed
// under a DID (GET /api/v1/signing-keys/{did}, /{did}/{kid} and the batch ?keys= route), message
// verification (GET /api/v1/verify/{msgid}), key retirement by its owner (POST
// /api/v1/devices/sign-out), and the evidence bundles behind /api/v1/channels/{name}/evidence.
//
// It reads keys from the replicated state (raft/fsm) and messages from the node's event store,
// and rebuilds canonical documents with node/signing. Keys the anonymous batch lookup reads
// from did:web documents stay in a bounded cache on this node (fetched.go), never in the
// replicated state: anyone may ask for any did:web. A message is served (verify) only when its
// channel as it is now may show it (fsm.Channel.MessageVisible), and a refusal never names the
// channel. The private server key is used only to seal evidence bundles; it is never serialized.
//
// A deployment is one server, did:web:<server name>, however many nodes serve it. Each node files
// its own server key through Raft (source server-key, under its node name); every such key is
// listed under the deployment's DID by the signing-keys routes (list, kid and batch) on every
// node. A verify answer's key_source is therefore:
//   - server-key: a key of this deployment, whichever node signed and whichever node answers;
//   - origin-server: a key of another server, filed from that server's did:web document or its
//     relayed events when it reached this one through federation;
//   - the key's own source (local-session, did-document, ...) for a user's key.
//
// An evidence bundle carries, per signed message, the canonical bytes its signature covers
// (canonical_form, and canonical_hex), inside what the bundle signature seals.
package signingapi
