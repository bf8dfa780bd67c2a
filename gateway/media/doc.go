// Package media owns the media and key routes of the public API: uploads (POST /api/v1/upload)
// and their downloads (/api/v1/media/...), the PDS blob proxy (/api/v1/blob), link previews
// (/api/v1/og), channel media spaces (/api/v1/media-space, /api/v1/space-media/...), pre-key
// bundles (/api/v1/keys) and the sealed group keys of encrypted channels
// (/api/v1/channels/{name}/groupkeys); and the cluster-plane routes through which nodes copy and
// read each other's uploads.
//
// # Where uploads live in a cluster
//
// An upload's metadata (id, the node that took it, the nodes that hold a copy, size, type, file
// name, private flag, uploader DID, channel, image dimensions) is replicated through Raft
// (fsm.RecordMedia, fsm.AddMediaHolder, fsm.DropMediaHolder), so every node knows every upload.
// The bytes live on the disks of --media-replicas servers of the Raft configuration (2 by
// default, capped by the cluster size; 1 on a single node), under <media dir>/objects/<id>: the
// node that takes an upload seals it, streams its plaintext to the servers ranked first for the id
// over the cluster listener's mutual-TLS HTTP plane (PUT /internal/v1/media/{id}, signed by the
// node's server key like every internal route), each of which seals its own copy, and records and
// answers the upload only once that many hold it (503 with Retry-After otherwise; nothing is
// recorded). A node asked for an upload it does not hold streams it from a holder (GET
// /internal/v1/media/{id}, Range passed on), the next holder being asked when one is down or has
// lost its copy; nothing is cached on the way. When no holder answers, the answer is 503 with the
// Error object and Retry-After. A repair pass (replicas.go; at start, after every membership
// change and every minute) restores the count after a server leaves the configuration: departed
// nodes are dropped from the holder sets, and for each upload short of copies the servers ranked
// first among those up and without one fetch it from a holder and record themselves; a holder
// whose copy is missing from its disk fetches it again. palaver_media_under_replicated counts the
// uploads short of copies. During a rolling upgrade from v0.1.0 (Config.Levels below 1) an upload
// is recorded as v0.1.0 records it (the taking node as its only holder, no deployment total) and
// answered even short of copies (a v0.1.0 server takes none); the repair pass changes no holder
// set meanwhile, and its first pass at level 1 records the copies made meanwhile and makes the
// missing ones.
//
// With --media-store s3://bucket/prefix the sealed objects live instead in an S3-compatible object
// store the cluster shares (s3.go, objects.go; minio-go): an upload is one object, sealed before
// it leaves the node, read by every node from the store by ranged GETs; there are no copies
// between nodes and no repair pass, and the first server in name order sweeps the store.
// A miss in the replica is checked again after a read index, so a URL minted on one node a moment
// ago works at once on another. A download's Range is normalized before it is served or passed
// on (ranges.go: overlapping and adjacent ranges merged, at most MaxRanges parts, more coalesced
// into one covering range), so a header of thousands of ranges costs no more than the object;
// downloads without a live bearer are counted per client address (--media-downloads-per-minute,
// 429 beyond). An unsatisfiable range is a 416 with the Error object (the REST server replaces
// net/http's text).
//
// # Capability URLs
//
// A private upload's URL is /api/v1/media/{id}/{sig}/{filename}: id is 128 random bits, sig is
// HMAC-SHA256 over the id under the capability key, base64url; filename is cosmetic. A wrong sig
// (or an id that does not match it) is 403 before anything about the id is said; a valid sig of
// an unknown id is 404. The capability key is a random 32-byte key proposed once through Raft
// (fsm.SetMediaKey; the first one applied wins), so it is the same on every node, survives the
// rotation of the cluster secret, and no node's private signing key is involved or leaves its
// node. It lives in the Raft log and snapshots, which the data directory keeps 0600. Public
// uploads get the plain /api/v1/media/{id}/{filename}; asking for a private one that way is 403.
//
// # At rest
//
// Every upload, public or private, is encrypted on disk with AES-256-GCM under a key derived by
// HKDF-SHA256 from the node's master key (<media dir>/master.key, 0600, never sent anywhere) and
// the object id. The plaintext is sealed in 64 KiB chunks whose nonce is the chunk index and
// whose additional data binds the id, the index and a last-chunk flag, so a Range read decrypts
// only the chunks it touches and chunks cannot be reordered, swapped or cut off. Every holder
// seals its copy under its own master key; a copy travels between nodes only as plaintext inside
// the cluster plane's mutual TLS, and only a holder can decrypt the copy on its disk. Objects in a
// shared object store are sealed alike under a key derived (HKDF, a label of its own) from the
// cluster's capability key, which Raft holds, so that any node opens them and the store sees
// only sealed chunks.
//
// # Uploads
//
// The body is read as a stream (multipart), behind http.MaxBytesReader at 12 MB (413, also when
// the client understates the length), into a temporary file under <media dir>/tmp that is renamed
// into place only when complete; a refused, truncated or interrupted upload leaves nothing (and
// tmp is emptied at start). The type is sniffed from the bytes (http.DetectContentType), image
// dimensions read with image.DecodeConfig (png, jpeg, gif, webp). Limits: a per-DID quota
// (--media-quota-bytes, enforced in the state machine with the limit the proposer stamps, so all
// nodes agree; 413), the deployment's total (--media-total-bytes, stamped the same way; 507),
// the bytes per client address and hour on this node (--media-address-bytes; 429), a free-disk
// floor checked with statfs (--media-min-free-bytes; 507) and this node's disk cap
// (--media-disk-bytes; 507). DELETE /api/v1/media/{id} deletes an upload (its uploader or a server
// operator; fsm.DeleteMedia); with --media-retention the holders delete their uploads older than
// that, and each holder's sweep removes the bytes no record names (budget.go). Served media carry
// nosniff, a sandboxing Content-Security-Policy and a Content-Disposition that is inline only for
// images, audio, video and PDF; text is served as text/plain and other types as downloads.
//
// # Fetching other servers' URLs
//
// The blob proxy, link previews and space media fetch through gateway/fetchguard (request-forgery
// guard, bounded time and size). The blob proxy serves only https getBlob URLs on the Bluesky PDS
// hosts and cdn.bsky.app, plus configured --blob-origin origins; it forwards Range, never passes
// a Content-Disposition on, and relays only image, audio and video types as such. Link previews
// are parsed with golang.org/x/net/html up to </head> within 1 MiB and kept in a 512-entry LRU
// for ten minutes. Both share the media rate limit (429 with Retry-After).
//
// # Media spaces
//
// With --media-space-authority, GET /api/v1/media-space asks the authority to create the
// channel's space on first use (POST <authority>/spaces {channel, server, creator} → {ref,
// type}) and records it through Raft (fsm.SetMediaSpace, bounded by --max-media-spaces: 507).
// Two first uses racing on different nodes both ask the authority; the first record applied wins
// and the other space is left unused. GET /api/v1/space-media/{ref}/{filename} decodes ref
// (base64url at://<did>/<collection>/<rkey>), resolves the DID's PDS, reads the record
// (com.atproto.repo.getRecord; its value names the space and the blob), checks that the caller
// holds the space's channel, and relays the blob (com.atproto.sync.getBlob) through the guard.
//
// # Keys for encrypted channels
//
// Pre-key bundles (a JSON object of at most 16 KiB per DID, written only by that DID's bearer)
// and group keys (per channel, epoch and member DID; at most 1000 members an epoch, 2048 bytes a
// sealed key, the 16 newest epochs kept; written by the founder or a DID op, which makes the
// channel +E) are replicated through Raft and read from the local replica on any node. Group
// keys and media spaces belong to a channel's incarnation: a channel created again under the
// same name starts without them.
package media
