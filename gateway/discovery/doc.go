// Package discovery owns the documents through which agents find and use a
// node on their own: /llms.txt, /agents.md (and /AGENTS.md), /auth.md,
// /.well-known/welcome.md, /index.md and the home page at /, /tos,
// /robots.txt, /sitemap.xml and the JSON documents under /.well-known
// (ard.json and its legacy name ai-catalog.json, agent-card.json,
// agent.json, api-catalog, mcp, mcp/server-card.json and
// http-message-signatures-directory).
//
// The route table they are derived from is the REST server's contract
// document: every mounted route is declared there once (method, path,
// auth, summary, schemas), by openapi.yaml in each package that mounts
// routes, and the REST server prunes it to what is mounted. The index of
// llms.txt, the sitemap, the api-catalog linkset, agent.json's
// capabilities (exactly the mounted /agent/tools/* routes), the agent
// card's skills and the catalog entries list only routes found there, so no
// document names a route the node lacks. agents.md states the limits the
// REST server reports and those the node passes in Config.
//
// The documents are built once, on the first request, when every route is
// mounted, from the configured base URL (never the request's Host) and
// constant text, so every node of a deployment serves the same bytes apart
// from its base URL and IRC ports, and the same bytes across restarts. The
// terms of service are built in, or the operator's file (Terms) served as
// read. GET / negotiates: markdown (index.md) unless the client prefers
// text/html, which gets the same content rendered by goldmark, with
// Vary: Accept. The routes hang off the REST server's engine, so its
// security, discovery-link and CORS headers hold on every document.
package discovery
