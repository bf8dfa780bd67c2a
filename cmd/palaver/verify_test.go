package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/node/signing"
)

// sealedBundle builds a bundle as the evidence endpoint would: one message
// signed by its sender's key, one by the server key, one unsigned guest
// message, sealed with the server key.
func sealedBundle(t *testing.T) (*signing.Bundle, ed25519.PrivateKey) {
	t.Helper()
	serverPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	clientPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	serverPub := serverPriv.Public().(ed25519.PublicKey)
	clientPub := clientPriv.Public().(ed25519.PublicKey)
	venue, err := signing.ChannelVenue("#Evidence")
	if err != nil {
		t.Fatal(err)
	}
	sign := func(priv ed25519.PrivateKey, from string, m signing.BundleMessage) signing.BundleMessage {
		doc := signing.Message{
			Envelope: signing.Envelope{From: from, MsgID: m.MsgID, Venue: venue},
			Body:     m.Text,
			Reply:    signing.ReplyFromTags(m.Tags),
			Edit:     string(m.ReplacesMsgID),
			Tags:     m.Tags,
		}
		canon, err := doc.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		m.Signature = signing.NullString(signing.Sign(priv, canon))
		return m
	}
	b := &signing.Bundle{
		ServerName: "irc.example",
		Channel:    "#evidence",
		ExportedAt: "2026-08-10T12:00:00Z",
		Keys: map[string]string{
			signing.KID(clientPub): signing.EncodePublicKey(clientPub),
			signing.KID(serverPub): signing.EncodePublicKey(serverPub),
		},
		Messages: []signing.BundleMessage{
			sign(clientPriv, "did:plc:alice", signing.BundleMessage{
				MsgID: "01KYVT1W2P0000000000000000", Channel: "#evidence", Sender: "alice", SenderDID: "did:plc:alice",
				Text: "the build is green", Timestamp: 1786000000, Tags: map[string]string{"+freeq.at/ref": "01KYVT0000000000000000000A"},
			}),
			sign(serverPriv, "did:plc:bob", signing.BundleMessage{
				MsgID: "01KYVT5Z8Q0000000000000000", Channel: "#evidence", Sender: "bob", SenderDID: "did:plc:bob",
				Text: "shipping", Timestamp: 1786000060,
			}),
			{MsgID: "01KYVT6000000000000000000B", Channel: "#evidence", Sender: "guest7", Text: "hi", Timestamp: 1786000120},
		},
	}
	if err := signing.SignBundle(serverPriv, b); err != nil {
		t.Fatalf("SignBundle: %v", err)
	}
	return b, serverPriv
}

func writeBundle(t *testing.T, b *signing.Bundle) string {
	t.Helper()
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyCommand(t *testing.T) {
	tests := []struct {
		name       string
		tamper     func(b *signing.Bundle, serverPriv ed25519.PrivateKey) error
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{
			name:       "intact",
			wantCode:   0,
			wantStdout: []string{"OK: bundle signature valid; 2 valid, 0 invalid, 0 unverifiable, 1 unsigned", "proves authorship", "proves relay", "skipped"},
		},
		{
			name: "text tampered",
			tamper: func(b *signing.Bundle, _ ed25519.PrivateKey) error {
				b.Messages[0].Text = "the build is red"
				return nil
			},
			wantCode:   1,
			wantStdout: []string{"INVALID", "FAIL: 1 valid, 1 invalid"},
			wantStderr: []string{"bundle signature does not verify", "message 01KYVT1W2P0000000000000000 from alice: message signature is invalid (signature-mismatch)"},
		},
		{
			name: "text tampered and resealed",
			tamper: func(b *signing.Bundle, serverPriv ed25519.PrivateKey) error {
				b.Messages[1].Text = "not shipping"
				return signing.SignBundle(serverPriv, b)
			},
			wantCode:   1,
			wantStdout: []string{"signature valid", "INVALID"},
			wantStderr: []string{"message 01KYVT5Z8Q0000000000000000 from bob: message signature is invalid"},
		},
		{
			name: "bundle signature tampered",
			tamper: func(b *signing.Bundle, _ ed25519.PrivateKey) error {
				sig := []byte(b.BundleSignature)
				if sig[0] == 'A' {
					sig[0] = 'B'
				} else {
					sig[0] = 'A'
				}
				b.BundleSignature = string(sig)
				return nil
			},
			wantCode:   1,
			wantStdout: []string{"signature invalid", "FAIL: 2 valid, 0 invalid"},
			wantStderr: []string{"bundle signature does not verify"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, serverPriv := sealedBundle(t)
			if tt.tamper != nil {
				if err := tt.tamper(b, serverPriv); err != nil {
					t.Fatal(err)
				}
			}
			path := writeBundle(t, b)
			var stdout, stderr bytes.Buffer
			code := runVerify(context.Background(), []string{path}, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, &stdout, &stderr)
			}
			for _, want := range tt.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, &stdout)
				}
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, &stderr)
				}
			}
		})
	}
}

func TestVerifyCommandStdinAndUsage(t *testing.T) {
	b, _ := sealedBundle(t)
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
	}{
		{"stdin", []string{"-"}, string(data), 0, "OK:"},
		{"quiet", []string{"-q", "-"}, string(data), 0, "OK:"},
		{"stdin not JSON", []string{"-"}, "{", 1, "FAIL:"},
		{"no argument", nil, "", 2, ""},
		{"two arguments", []string{"a", "b"}, "", 2, ""},
		{"missing file", []string{filepath.Join(t.TempDir(), "absent.json")}, "", 1, ""},
		{"help", []string{"-h"}, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := verifyCommand(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Fatalf("stdout lacks %q:\n%s", tt.wantOut, &stdout)
			}
			if tt.name == "quiet" && strings.Count(stdout.String(), "\n") != 1 {
				t.Fatalf("quiet printed more than the summary:\n%s", &stdout)
			}
		})
	}
}
