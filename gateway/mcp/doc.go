// Package mcp owns the node's remote MCP endpoint, POST /mcp: a JSON-RPC
// 2.0 server (MCP protocol versions 2025-11-25 and 2025-06-18, streamable HTTP answered
// with JSON, no sessions and no server-initiated stream) whose tools read
// the chat through the REST routes of this node.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package mcp
