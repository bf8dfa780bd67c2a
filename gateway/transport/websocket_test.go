package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsAccept turns an HTTP request into the server side of a WebSocket.
type wsAccept func(ctx context.Context, w http.ResponseWriter, r *http.Request) (Conn, error)

// wsAccepts are the two ways a WebSocket becomes a Conn: AcceptWebSocket (what the server uses),
// and NewWebSocketConn over a connection the library accepted with its own buffers.
var wsAccepts = []struct {
	name   string
	accept wsAccept
}{
	{"AcceptWebSocket", func(ctx context.Context, w http.ResponseWriter, r *http.Request) (Conn, error) {
		addr, _ := net.ResolveTCPAddr("tcp", r.RemoteAddr)
		return AcceptWebSocket(ctx, w, r, addr, nil)
	}},
	{"NewWebSocketConn", func(ctx context.Context, w http.ResponseWriter, r *http.Request) (Conn, error) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			Subprotocols: []string{SubprotocolText, SubprotocolBinary},
		})
		if err != nil {
			return nil, err
		}
		addr, _ := net.ResolveTCPAddr("tcp", r.RemoteAddr)
		return NewWebSocketConn(ctx, ws, addr), nil
	}},
}

// forEachAccept runs test once for each of wsAccepts.
func forEachAccept(t *testing.T, test func(t *testing.T, accept wsAccept)) {
	for _, a := range wsAccepts {
		t.Run(a.name, func(t *testing.T) { test(t, a.accept) })
	}
}

// wsPair starts a loopback HTTP server that upgrades one request with accept and hands the
// server side back with the client side.
func wsPair(t testing.TB, accept wsAccept, subprotocols ...string) (Conn, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	serverSide := make(chan Conn, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := accept(ctx, w, r)
		if err != nil {
			t.Errorf("accept: %v", err)
			close(serverSide)
			return
		}
		serverSide <- conn
		<-release
	}))
	t.Cleanup(func() { close(release); srv.Close() })

	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{Subprotocols: subprotocols})
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadLimit(4 * maxDrainBytes)
	conn, ok := <-serverSide
	if !ok {
		client.CloseNow()
		t.Fatal("server side not accepted")
	}
	// Cleanups run last-registered first: drop the client's TCP connection
	// before closing the server side, so the close handshake does not wait
	// for a client that no longer reads.
	t.Cleanup(func() { conn.Close() })
	t.Cleanup(func() { client.CloseNow() })
	return conn, client
}

func TestWebSocketReadLine(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		conn, client := wsPair(t, accept)
		ctx := context.Background()
		long := strings.Repeat("x", MaxLineBytes)
		messages := []struct {
			typ  websocket.MessageType
			data string
		}{
			{websocket.MessageText, "NICK a"},
			{websocket.MessageBinary, "USER b 0 * :c\r\n"},
			{websocket.MessageText, "PING\n"},
			{websocket.MessageText, ""},
			{websocket.MessageText, long},
			{websocket.MessageText, long + "y"},
			{websocket.MessageText, strings.Repeat("z", 100000)},
			{websocket.MessageText, "AFTER"},
		}
		go func() {
			for _, m := range messages {
				if err := client.Write(ctx, m.typ, []byte(m.data)); err != nil {
					return
				}
			}
			client.Close(websocket.StatusNormalClosure, "")
		}()
		want := []readResult{
			{line: "NICK a"}, {line: "USER b 0 * :c"}, {line: "PING"}, {line: ""}, {line: long},
			{err: ErrLineTooLong}, {err: ErrLineTooLong}, {line: "AFTER"}, {err: io.EOF},
		}
		var got []readResult
		for range len(want) {
			line, err := conn.ReadLine()
			got = append(got, readResult{line: string(line), err: err})
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				break
			}
		}
		if !equalResults(got, want) {
			t.Fatalf("got %s, want %s", describe(got), describe(want))
		}
	})
}

func TestWebSocketFloodIsFatal(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		conn, client := wsPair(t, accept)
		go client.Write(context.Background(), websocket.MessageText, make([]byte, maxDrainBytes+1))
		_, err := conn.ReadLine()
		if !errors.Is(err, ErrInputFlood) {
			t.Fatalf("ReadLine = %v, want ErrInputFlood", err)
		}
	})
}

func TestWebSocketWriteLines(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		tests := []struct {
			name        string
			subprotocol string
			line        string
			wantType    websocket.MessageType
			wantData    string
		}{
			{"utf8 as text", "", "PRIVMSG #a :héllo\r\n", websocket.MessageText, "PRIVMSG #a :héllo"},
			{"invalid utf8 as binary", "", "PRIVMSG #a :\xff\r\n", websocket.MessageBinary, "PRIVMSG #a :\xff"},
			{"text subprotocol replaces invalid utf8", SubprotocolText, "PRIVMSG #a :\xff\r\n", websocket.MessageText, "PRIVMSG #a :\uFFFD"},
			{"binary subprotocol", SubprotocolBinary, "PING :x\r\n", websocket.MessageBinary, "PING :x"},
			{"line without crlf", "", "PING", websocket.MessageText, "PING"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var protocols []string
				if tt.subprotocol != "" {
					protocols = []string{tt.subprotocol}
				}
				conn, client := wsPair(t, accept, protocols...)
				if client.Subprotocol() != tt.subprotocol {
					t.Fatalf("negotiated %q", client.Subprotocol())
				}
				if err := conn.WriteLines([][]byte{[]byte(tt.line), []byte("END\r\n")}); err != nil {
					t.Fatal(err)
				}
				for i, want := range []struct {
					typ  websocket.MessageType
					data string
				}{{tt.wantType, tt.wantData}, {websocket.MessageText, "END"}} {
					if tt.subprotocol == SubprotocolBinary {
						want.typ = websocket.MessageBinary
					}
					typ, data, err := client.Read(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if typ != want.typ || string(data) != want.data {
						t.Fatalf("message %d = %v %q, want %v %q", i, typ, data, want.typ, want.data)
					}
				}
			})
		}
	})
}

func TestWebSocketConcurrentWriteAndClose(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		conn, client := wsPair(t, accept)
		clientDone := make(chan struct{})
		go func() {
			defer close(clientDone)
			for {
				if _, _, err := client.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		if err := closeWhileWriting(t, conn, 500); err == nil {
			t.Fatal("write after Close succeeded")
		}
		<-clientDone
		if _, err := conn.ReadLine(); err != io.EOF {
			t.Fatalf("ReadLine after Close = %v, want io.EOF", err)
		}
	})
}

func TestWebSocketKindAndAddr(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		conn, _ := wsPair(t, accept)
		if conn.Kind() != KindWebSocket {
			t.Fatalf("Kind = %q", conn.Kind())
		}
		if addr, ok := conn.RemoteAddr().(*net.TCPAddr); !ok || !addr.IP.IsLoopback() {
			t.Fatalf("RemoteAddr = %v", conn.RemoteAddr())
		}
	})
}

func TestWebSocketTextMustBeUTF8(t *testing.T) {
	forEachAccept(t, func(t *testing.T, accept wsAccept) {
		tests := []struct {
			name    string
			typ     websocket.MessageType
			data    string
			wantErr bool
		}{
			{"valid text", websocket.MessageText, "PRIVMSG #a :héllo", false},
			{"invalid bytes in binary", websocket.MessageBinary, "PRIVMSG #a :\xff", false},
			{"invalid bytes in text", websocket.MessageText, "PRIVMSG #a :\xff\xfe", true},
			{"truncated sequence in text", websocket.MessageText, "PRIVMSG #a :\xc3", true},
			{"surrogate in text", websocket.MessageText, "PRIVMSG #a :\xed\xa0\x80", true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				conn, client := wsPair(t, accept)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				go client.Write(ctx, tt.typ, []byte(tt.data))
				// The client reads as a browser does, answering the close handshake.
				clientRead := make(chan error, 1)
				go func() {
					_, _, err := client.Read(ctx)
					clientRead <- err
				}()
				line, err := conn.ReadLine()
				if !tt.wantErr {
					if err != nil || string(line) != tt.data {
						t.Fatalf("ReadLine = %q, %v", line, err)
					}
					return
				}
				if !errors.Is(err, ErrInvalidText) {
					t.Fatalf("ReadLine error %v, want ErrInvalidText", err)
				}
				if err := <-clientRead; websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
					t.Fatalf("client saw %v, want close status 1007", err)
				}
			})
		}
	})
}
