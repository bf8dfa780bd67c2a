package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.key")
	priv, created, err := loadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("first call: created=%v err=%v", created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if got := strings.TrimSpace(string(data)); len(got) != 2*ed25519.SeedSize {
		t.Errorf("key file holds %q, want %d hex characters", got, 2*ed25519.SeedSize)
	}
	again, created, err := loadOrCreateKey(path)
	if err != nil || created {
		t.Fatalf("second call: created=%v err=%v", created, err)
	}
	if !priv.Equal(again) {
		t.Error("reloading the key file gave a different key")
	}
}

func TestLoadOrCreateKeyRejectsBadFiles(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not hex", "zz"},
		{"short seed", "0102"},
		{"long seed", strings.Repeat("00", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.key")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := loadOrCreateKey(path); err == nil {
				t.Error("loadOrCreateKey accepted a bad key file")
			}
		})
	}
}

func TestDefaultNick(t *testing.T) {
	if got := defaultNick("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"); got != "agent-iTBz1ymu" {
		t.Errorf("defaultNick = %q", got)
	}
}

func TestRunLoginPrintDID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.key")
	if err := os.WriteFile(path, []byte(strings.Repeat("00", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runLogin(context.Background(), []string{"--key", path, "--print-did"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if got := stdout.String(); got != "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp\n" {
		t.Errorf("stdout = %q", got)
	}
}

func TestRunLoginUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"extra-arg"}} {
		var stdout, stderr bytes.Buffer
		if code := runLogin(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("runLogin(%q) exit %d, want 2", args, code)
		}
	}
}

// TestRunLoginAgainstScriptedServer drives the whole command against a
// minimal scripted server over plain TCP. Signature checking is covered by
// the ircclient tests.
func TestRunLoginAgainstScriptedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan []string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- nil
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		r := bufio.NewReader(conn)
		var got []string
		send := func(line string) { conn.Write([]byte(line + "\r\n")) }
		replies := map[string]string{
			"CAP LS":       ":srv CAP * LS :sasl message-tags",
			"CAP REQ":      ":srv CAP * ACK :sasl message-tags",
			"AUTHENTICATE": "AUTHENTICATE " + base64.RawURLEncoding.EncodeToString([]byte(`{"nonce":"x"}`)),
			"CAP END":      ":srv 001 agent :Welcome",
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			line = strings.TrimSuffix(line, "\r\n")
			got = append(got, line)
			switch {
			case line == "AUTHENTICATE ATPROTO-CHALLENGE":
				send(replies["AUTHENTICATE"])
			case strings.HasPrefix(line, "AUTHENTICATE "):
				send(":srv 903 * :SASL authentication successful")
				send(":srv NOTICE * :API-BEARER secret-token")
			case strings.HasPrefix(line, "CAP LS"):
				send(replies["CAP LS"])
			case strings.HasPrefix(line, "CAP REQ"):
				send(replies["CAP REQ"])
			case line == "CAP END":
				send(replies["CAP END"])
			}
			if strings.HasPrefix(line, "QUIT") {
				break
			}
		}
		served <- got
	}()

	keyPath := filepath.Join(t.TempDir(), "agent.key")
	var stdout, stderr bytes.Buffer
	args := []string{"--key", keyPath, "--server", ln.Addr().String(), "--tls=false", "--hold", "1ms", "--nick", "agent"}
	if code := runLogin(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if got := stdout.String(); got != "secret-token\n" {
		t.Errorf("stdout = %q, want the token alone", got)
	}
	if !strings.Contains(stderr.String(), "did:key:z6Mk") {
		t.Errorf("stderr does not show the DID: %s", stderr.String())
	}
	lines := <-served
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "QUIT") {
		t.Errorf("server saw %q, want it to end with QUIT", lines)
	}
}
