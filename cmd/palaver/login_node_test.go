package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
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

// TestLoginMintsAClientPassword runs `palaver login --mint-password` against a node and logs in
// with the printed password over SASL PLAIN as the key's DID.
func TestLoginMintsAClientPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := nodetest.Start(t, nil)
	keyFile := filepath.Join(t.TempDir(), "agent.key")
	var out, didOut strings.Builder
	if code := runLogin(ctx, []string{"--key", keyFile, "--print-did"}, &didOut, io.Discard); code != 0 {
		t.Fatalf("--print-did exited %d", code)
	}
	did := strings.TrimSpace(didOut.String())
	args := []string{"--key", keyFile, "--server", n.IRCAddr(), "--tls=false", "--mint-password", "irssi"}
	if code := runLogin(ctx, args, &out, io.Discard); code != 0 {
		t.Fatalf("login --mint-password exited %d", code)
	}
	password := strings.TrimSpace(out.String())
	if len(password) != 32 {
		t.Fatalf("printed %q", out.String())
	}
	// A second password of the same name is refused.
	if code := runLogin(ctx, args, io.Discard, io.Discard); code != 1 {
		t.Fatalf("minting the same name again exited %d, want 1", code)
	}
	c, err := ircclient.Dial(ctx, n.IRCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload := base64.StdEncoding.EncodeToString([]byte("\x00" + did + "\x00" + password))
	for _, l := range []string{"AUTHENTICATE PLAIN", "AUTHENTICATE " + payload} {
		if err := c.Send(l); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.ExpectCommand(ctx, "900", "904")
	if err != nil || m.Command != "900" || m.Param(2) != did {
		t.Fatalf("PLAIN with the minted password: %v %v", m, err)
	}
}
