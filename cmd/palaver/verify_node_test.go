package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

// TestEvidenceBundleFromANodeVerifiesOffline exports a channel's evidence from a running node and
// checks it with `palaver verify`; a copy with one edited message is rejected.
func TestEvidenceBundleFromANodeVerifiesOffline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := nodetest.Start(t, nil)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	c, err := ircclient.Dial(ctx, n.IRCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginSASL(ctx, ircclient.NewEd25519Signer(priv), "author", "echo-message"); err != nil {
		t.Fatal(err)
	}
	g, err := ircclient.Dial(ctx, n.IRCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Register(ctx, "guest1", "echo-message"); err != nil {
		t.Fatal(err)
	}
	c.Send("JOIN #evidence")
	g.Send("JOIN #evidence")
	for _, line := range []string{"PRIVMSG #evidence :first, signed by the server for a DID user", "PRIVMSG #evidence :second"} {
		c.Send(line)
		if _, err := c.ExpectCommand(ctx, "PRIVMSG"); err != nil {
			t.Fatal(err)
		}
	}
	g.Send("PRIVMSG #evidence :a guest line, unsigned")
	if _, err := g.ExpectCommand(ctx, "PRIVMSG"); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get("http://" + n.HTTPAddr() + "/api/v1/channels/evidence/evidence")
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("evidence: %d %s", resp.StatusCode, bundle)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "bundle.json")
	if err := os.WriteFile(good, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := runVerify(ctx, []string{good}, &out, &errOut); code != 0 {
		t.Fatalf("palaver verify on a fresh bundle exited %d: %s %s", code, out.String(), errOut.String())
	}
	tampered := filepath.Join(dir, "tampered.json")
	if err := os.WriteFile(tampered, []byte(strings.Replace(string(bundle), `"second"`, `"2nd"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := runVerify(ctx, []string{tampered}, &out, &errOut); code == 0 {
		t.Fatalf("palaver verify accepted a tampered bundle: %s", out.String())
	}
}
