package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

// TestLoginAgainstARealNode runs `palaver login` against a node on loopback over TLS and over
// WebSocket: the printed token works on a bearer route while the session is held, and dies with it.
func TestLoginAgainstARealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := nodetest.Start(t, func(cfg *node.Config) { cfg.TLSAddr, cfg.NoFloodLimits = "127.0.0.1:0", false })
	keyFile := filepath.Join(t.TempDir(), "agent.key")
	cases := map[string][]string{
		"tls":       {"--server", n.TLSAddr(), "--insecure"},
		"websocket": {"--ws", "ws://" + n.HTTPAddr() + "/irc"},
	}
	for name, transport := range cases {
		t.Run(name, func(t *testing.T) {
			holdCtx, stop := context.WithCancel(ctx)
			defer stop()
			out, outW := io.Pipe()
			done := make(chan int, 1)
			go func() {
				args := append([]string{"--key", keyFile, "--hold", "0"}, transport...)
				done <- runLogin(holdCtx, args, outW, io.Discard)
				outW.Close()
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the token: %v", err)
			}
			token := strings.TrimSpace(line)
			url := "http://" + n.HTTPAddr() + "/api/v1/favorites"
			if code := get(t, url, token); code != http.StatusOK {
				t.Fatalf("token refused while held: %d", code)
			}
			go io.Copy(io.Discard, out)
			stop()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("login exited %d", code)
				}
			case <-ctx.Done():
				t.Fatal("login did not stop")
			}
			deadline := time.Now().Add(20 * time.Second)
			for get(t, url, token) != http.StatusUnauthorized {
				if time.Now().After(deadline) {
					t.Fatal("token still accepted after the session ended")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
