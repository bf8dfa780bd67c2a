// Package mcp owns the node's remote MCP endpoint, POST /mcp: a JSON-RPC
// 2.0 server (MCP protocol versions 2025-11-25 and 2025-06-18, streamable HTTP answered
// with JSON, no sessions and no server-initiated stream) whose tools read
// the chat through the REST routes of this node.
//
// It is written by hand because no Go MCP server SDK meets the contract:
// the contract keeps JSON-RPC batches (an array body answered with an
// array), which 2025-06-18 removed and which github.com/modelcontextprotocol/go-sdk
// refuses with HTTP 400 as soon as a client sends the standard
// MCP-Protocol-Version header, while github.com/mark3labs/mcp-go never
// accepts an array; both answer an unknown tool with -32602 where the
// contract wants -32601, and go-sdk answers parse errors and unknown
// methods with plain-text 400s instead of JSON-RPC errors and refuses
// clients whose Accept lacks text/event-stream. The whole surface is seven
// methods over five read-only tools, small enough to own. Both SDKs'
// clients are used in the tests as interoperability checks.
//
// Wire rules: initialize answers the version the client asked for when it
// is 2025-11-25 or 2025-06-18, else 2025-11-25. A request whose
// MCP-Protocol-Version header is 2025-11-25 gets that version's answers:
// arguments that do not fit a tool's schema are a tool result with isError
// true (SEP-1303) instead of -32602; any other header value (a newer client
// probing with server/discover included) is answered as 2025-06-18. The body is one JSON-RPC object
// or a batch array, at most MaxBodyBytes (413 beyond); Accept and
// Content-Type are not checked. An entry without an id member is a
// notification and gets no answer ("id": null does get one); a request of
// only notifications is answered 202 with an empty body. Invalid JSON is
// -32700 with id null; a wrong jsonrpc, a missing method or a batch entry
// that is not an object is -32600; an unknown method (server/discover
// included) or tool is -32601; missing or malformed arguments are -32602.
// An empty batch ([]) is answered with a single -32600 error object, as
// JSON-RPC 2.0 says: it holds no notification, so the 202 rule does not
// cover it. Other HTTP methods than POST (and the CORS preflight) answer
// 405 with the Error object and Allow: POST.
//
// The tools freeq_channels, freeq_history, freeq_search, freeq_verify and
// freeq_pins run the REST route of the same purpose in process, through the
// REST server's own handler, with the caller's Authorization header, remote
// address and forwarding headers: authorization, the +i/+k/+E read rules,
// 503s and rate limits are the REST route's by construction, and each call
// is logged and counted by the REST server like any request. A REST refusal
// is a tool result with isError true and a text that explains it. Every
// request entry of a body, batch entries included, is also counted against
// a per-client-address limit of its own (error -32000 beyond it) and logged
// on its own, so a batch cannot multiply one HTTP request past the limits.
//
// Bounds: a batch holds at most MaxBatchEntries entries (one -32600 error
// beyond) and its answers at most MaxBatchResponseBytes (entries past it are
// answered with -32000), and a node serves at most Config.MaxConcurrent POSTs
// at once (503 with Retry-After beyond), so that a small body cannot ask for
// tens of megabytes. The resources are fixed once the node serves and their
// encoded contents are cached after the first read.
//
// Origin: servers must validate it (MCP transports, DNS rebinding). A
// request whose Origin is not the node's base URL, an --allowed-origin or,
// on a local node, a localhost page is refused with 403 and the Error
// object; a request without Origin passes. Admitted origins may read the
// answers, without credentials.
package mcp
