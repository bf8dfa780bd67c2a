// Package media owns the media and key routes of the public API: uploads (POST /api/v1/upload)
// and their downloads (/api/v1/media/...), the PDS blob proxy (/api/v1/blob), link previews
// (/api/v1/og), channel media spaces (/api/v1/media-space, /api/v1/space-media/...), pre-key
// bundles (/api/v1/keys) and the sealed group keys of encrypted channels
// (/api/v1/channels/{name}/groupkeys); and the cluster-plane routes through which nodes copy and
// read each other's uploads.
//
// How it works and why: DESIGN.md beside this file.
package media
