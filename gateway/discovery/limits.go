package discovery

import (
	"fmt"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/limits"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// limitRows are the rows of agents.md's limits table: a route's limits
// only when the route is mounted.
func limitRows(ops table, l limitsView, hasMCP bool) []limitRow {
	var rows []limitRow
	page := func(method, path, name string, p rest.PageLimit) {
		if ops.has(method, path) {
			rows = append(rows, limitRow{fmt.Sprintf("`limit` on %s (`%s`)", name, path), fmt.Sprintf("default %d, at most %d", p.Default, p.Max)})
		}
	}
	page("GET", "/api/v1/channels/{name}/history", "history", l.REST.History)
	page("GET", "/api/v1/search", "search", l.REST.Search)
	page("GET", "/api/v1/channels/{name}/export", "export", l.REST.Export)
	page("GET", "/api/v1/channels/{name}/evidence", "evidence", l.REST.Evidence)
	batch := ops.has("GET", "/api/v1/signing-keys")
	if batch && l.BatchKeyPairs > 0 {
		rows = append(rows, limitRow{"batch key lookup (`/api/v1/signing-keys?keys=`)", fmt.Sprintf("%d did/kid pairs per request", l.BatchKeyPairs)})
	}
	perAddress := func(r rest.RateLimit, what string) string {
		return fmt.Sprintf("%d %s per %s per client address", r.Requests, what, window(r.Window))
	}
	var records []string
	if batch {
		records = append(records, "batch key lookup")
	}
	var media []string
	for _, p := range []string{"/api/v1/upload", "/api/v1/blob", "/api/v1/og", "/api/v1/space-media/{ref}/{filename}"} {
		media = append(media, mounted(ops, p)...)
	}
	switch {
	case l.REST.RateLimitsOff && (len(records) > 0 || len(media) > 0):
		rows = append(rows, limitRow{"per-address rate limits of the REST routes", "off on this node"})
	case !l.REST.RateLimitsOff:
		if len(records) > 0 {
			rows = append(rows, limitRow{strings.Join(records, ", "), perAddress(l.REST.Records, "requests") + ", then 429 with `Retry-After`"})
		}
		if len(media) > 0 {
			rows = append(rows, limitRow{strings.Join(media, ", "), perAddress(l.REST.Media, "requests") + ", then 429 with `Retry-After`"})
		}
	}
	if hasMCP {
		rows = append(rows, limitRow{"MCP body", fmt.Sprintf("%d bytes per `POST /mcp` (413 beyond)", l.MCPBodyBytes)})
		if l.MCPLimitsOff {
			rows = append(rows, limitRow{"MCP requests", "no per-address limit on this node"})
		} else {
			rows = append(rows, limitRow{"MCP requests", perAddress(l.MCP, "JSON-RPC requests") +
				", each entry of a batch counted; beyond, error -32000 with `retry_after`"})
		}
	}
	if l.MaxConnsPerIP > 0 {
		rows = append(rows, limitRow{"IRC connections", fmt.Sprintf("%d at once per client address (TCP, TLS and WebSocket together)", l.MaxConnsPerIP)})
	} else {
		rows = append(rows, limitRow{"IRC connections", "no per-address cap on this node"})
	}
	if l.FloodLimits {
		rows = append(rows,
			limitRow{"IRC commands", "10 per second, burst 10, per connection (registration, JOIN, NAMES, MODE, WHO, WHOIS, CHATHISTORY, PING/PONG and messages are exempt); beyond: `NOTICE * :Flood protection: you are sending commands too fast`"},
			limitRow{"IRC messages (PRIVMSG, NOTICE, TAGMSG)", "5 per 2 seconds per connection; beyond: numeric 404 `Flood protection: sending too fast`"})
	} else {
		rows = append(rows, limitRow{"IRC flood limits", "off on this node"})
	}
	rows = append(rows,
		limitRow{"IRC line", fmt.Sprintf("%d bytes with its tags and CRLF (417 beyond); client-only tags at most %d bytes", limits.LineBytes, limits.ClientTagBytes)},
		limitRow{"draft/multiline message", fmt.Sprintf("%d bytes of text (newlines included) in at most %d lines; beyond: `FAIL BATCH MULTILINE_MAX_BYTES` or `MULTILINE_MAX_LINES`", limits.MultilineBytes, limits.MultilineLines)})
	if b := l.Coordination; b.TotalBytes > 0 {
		rows = append(rows,
			limitRow{"coordination state per identity (the tasks, task events, evidence, ACT actions and events it files)",
				fmt.Sprintf("%s and %d items; beyond, its finished tasks and actions are forgotten oldest first, else `FAIL TAGMSG LIMIT_REACHED`", mib(b.DIDBytes), b.DIDItems)},
			limitRow{"coordination state per channel", fmt.Sprintf("%s and %d items, the same way", mib(b.VenueBytes), b.VenueItems)},
			limitRow{"coordination state of the server", fmt.Sprintf("%s and %d items, the same way; work in progress is never forgotten", mib(b.TotalBytes), b.TotalItems)},
			limitRow{"audit timelines", fmt.Sprintf("%s per channel and %s in all; the oldest items drop first", mib(b.TimelineBytes), mib(b.TimelineTotalBytes))},
			limitRow{"worst case, however many identities and addresses", fmt.Sprintf("%d identities at their budget fill the server's; at most %s of coordination state (%s in memory)",
				b.TotalBytes/b.DIDBytes, mib(b.TotalBytes+b.TimelineTotalBytes), mib(2*(b.TotalBytes+b.TimelineTotalBytes)))})
	}
	if ops.has("GET", "/api/v1/agents/spawned") {
		rows = append(rows,
			limitRow{"spawned agents (`AGENT SPAWN`)", fmt.Sprintf("%d at a time per parent DID (%d on the server); an agent whose `ttl` ran out frees its slot, "+
				"`AGENT DESPAWN <nick>` (the parent only) at once; its DID `did:web:<server>:agents:<scope>:<nick>` (scope: 16 hex digits of SHA-256 of the parent's DID) is its parent's alone",
				fsmcoord.MaxSpawnedPerDID, fsmcoord.MaxSpawned)},
			limitRow{"agent manifests", fmt.Sprintf("one per DID, %d on the server; when full, the manifest registered longest ago by a DID with no live session makes room", fsmcoord.MaxManifests)},
			limitRow{"tasks (`+freeq.at/event`)", "only the requester and the assignee (the first other DID that claims or reports on a task) move it on; others get `FAIL TAGMSG WRONG_SENDER`, a finished task `TERMINAL_TASK`"},
		)
	}
	if l.ChallengeTTL > 0 {
		rows = append(rows, limitRow{"SASL challenge", fmt.Sprintf("valid %s, single use; a new one for every attempt", window(l.ChallengeTTL))})
	}
	if l.SigningKeyLifetime > 0 {
		rows = append(rows, limitRow{"signing keys", fmt.Sprintf("a session key counts for %d days after registration", l.SigningKeyLifetime/(24*time.Hour))})
	}
	return rows
}

// mounted names path (in backquotes) when any operation is mounted on it.
func mounted(ops table, path string) []string {
	for _, o := range ops {
		if o.Path == path {
			return []string{"`" + path + "`"}
		}
	}
	return nil
}

// mib writes a byte count in MiB or KiB.
func mib(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func window(d time.Duration) string {
	return fmt.Sprintf("%d s", int64(d/time.Second))
}

// readsOf names the anonymous reads that are mounted.
func readsOf(ops table) string {
	var out []string
	for _, r := range []struct{ path, name string }{
		{"/api/v1/channels", "the public channel list"}, {"/api/v1/channels/{name}/history", "history"},
		{"/api/v1/search", "search"}, {"/api/v1/channels/{name}/export", "export"}, {"/api/v1/channels/{name}/topic", "topics"},
		{"/api/v1/channels/{name}/pins", "pins"}, {"/api/v1/users/{nick}", "users"}, {"/api/v1/actors/{did}", "identities"},
		{"/api/v1/signing-keys/{did}", "signing keys"}, {"/api/v1/verify/{msgid}", "message verification"},
	} {
		if ops.has("GET", r.path) {
			out = append(out, r.name)
		}
	}
	switch len(out) {
	case 0:
		return "the contract document"
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}
