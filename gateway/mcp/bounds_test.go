package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// readBatch is a batch of n resources/read of the contract document.
func readBatch(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"freeq://server/openapi.json"}}`, i+1)
	}
	return "[" + strings.Join(entries, ",") + "]"
}

// TestBatchAmplificationIsBounded: the 26 KB batch of 240 reads of openapi.json, which once
// answered 27.6 MB, is refused whole; a batch within the entry cap answers at most
// MaxBatchResponseBytes of resources, the rest of its entries with -32000.
func TestBatchAmplificationIsBounded(t *testing.T) {
	e := newEndpoint(t, mcp.Config{LimitOff: true})
	attack := readBatch(240)
	resp, body := e.post(t, attack)
	var one rpcResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &one) != nil || one.Error == nil || one.Error.Code != -32600 {
		t.Fatalf("a batch of 240 entries: %d %.300s", resp.StatusCode, body)
	}
	if len(body) > 1024 {
		t.Fatalf("the refusal is %d bytes", len(body))
	}

	resp, body = e.post(t, readBatch(mcp.MaxBatchEntries))
	var got []rpcResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got) != mcp.MaxBatchEntries {
		t.Fatalf("a batch of %d reads: %d %.300s", mcp.MaxBatchEntries, resp.StatusCode, body)
	}
	if len(body) > mcp.MaxBatchResponseBytes+64*1024 {
		t.Fatalf("a batch of %d reads answered %d bytes, over the %d budget", mcp.MaxBatchEntries, len(body), mcp.MaxBatchResponseBytes)
	}
	var served, refused int
	for i, r := range got {
		switch {
		case r.Error == nil:
			if refused > 0 {
				t.Fatalf("entry %d served after a refusal", i)
			}
			served++
		case r.Error.Code == -32000 && strings.Contains(r.Error.Message, "Response too large"):
			refused++
		default:
			t.Fatalf("entry %d: %+v", i, r.Error)
		}
	}
	if served == 0 || refused == 0 {
		t.Fatalf("%d served, %d refused: the budget did not apply", served, refused)
	}
}

// TestConcurrentMCPWorkIsBounded: with every slot held by a request whose body is still
// coming, another POST is answered 503 with Retry-After; once the slot frees, it is served.
func TestConcurrentMCPWorkIsBounded(t *testing.T) {
	e := newEndpoint(t, mcp.Config{LimitOff: true, MaxConcurrent: 1})
	addr := strings.TrimPrefix(e.base(), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(ping), ping[:10]); err != nil {
		t.Fatal(err)
	}
	var busy *http.Response
	poll.Within(t, 30*time.Second, "a POST refused while the slot is held", func() bool {
		resp, body := e.post(t, ping)
		if resp.StatusCode == http.StatusServiceUnavailable {
			errorObject(t, resp.Header, body)
			busy = resp
			return true
		}
		return false
	})
	if busy.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if _, err := io.WriteString(conn, ping[10:]); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a guard, not a synchronization
	held, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || held.StatusCode != http.StatusOK {
		t.Fatalf("the slow request: %v %v", err, held)
	}
	poll.Within(t, 30*time.Second, "a POST served once the slot is free", func() bool {
		resp, _ := e.post(t, ping)
		return resp.StatusCode == http.StatusOK
	})
}

// TestVersion2025_11_25 uses the official Go SDK pinned to 2025-11-25: the version is agreed,
// and arguments that do not fit a tool's schema are a tool result with isError (SEP-1303),
// where 2025-06-18 answers -32602.
func TestVersion2025_11_25(t *testing.T) {
	e := newEndpoint(t, mcp.Config{LimitOff: true})
	ctx := t.Context()
	client := sdk.NewClient(&sdk.Implementation{Name: "palaver-test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.url, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if v := session.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "freeq_history", Arguments: map[string]any{"limit": 5}})
	if err != nil {
		t.Fatalf("a tool call with a missing argument: %v", err)
	}
	if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"channel"`) {
		t.Fatalf("a missing argument: %+v", res)
	}
	res, err = session.CallTool(ctx, &sdk.CallToolParams{Name: "freeq_channels", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("freeq_channels: %v %+v", err, res)
	}

	bad := `{"name":"freeq_history","arguments":{"limit":5}}`
	if r := e.call(t, "tools/call", bad, "MCP-Protocol-Version", "2025-06-18"); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("2025-06-18: %+v", r)
	}
	if r := e.call(t, "tools/call", bad, "MCP-Protocol-Version", "2025-11-25"); r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("2025-11-25: %+v %s", r.Error, r.Result)
	}
}
