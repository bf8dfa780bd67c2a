package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/trust"
)

// TestClusterSecretCommands runs init, show, rotate and retire as docs/cluster.md shows them, and the
// mistakes each refuses.
func TestClusterSecretCommands(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"init", []string{"cluster", "secret", "init", "--out", path("secret")}, 0, "ca primary sha256:"},
		{"init refuses to overwrite", []string{"cluster", "secret", "init", "--out", path("secret")}, 1, "exists"},
		{"init without --out", []string{"cluster", "secret", "init"}, 2, "usage"},
		{"show", []string{"cluster", "secret", "show", path("secret")}, 0, "gossip-key newest sha256:"},
		{"rotate", []string{"cluster", "secret", "rotate", "--in", path("secret"), "--out", path("rotated")}, 0, "cross sha256:"},
		{"retire", []string{"cluster", "secret", "retire", "--in", path("rotated"), "--out", path("retired")}, 0, "ca primary"},
		{"rotate a missing file", []string{"cluster", "secret", "rotate", "--in", path("nothing"), "--out", path("x")}, 1, "no such file"},
		{"unknown command", []string{"cluster", "secret", "burn"}, 2, "unknown command"},
		{"no subcommand", []string{"cluster"}, 2, "Usage: palaver cluster secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.code || !strings.Contains(out, tt.contains) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", code, tt.code, out, tt.contains)
			}
			if strings.Contains(out, "PRIVATE") || strings.Contains(out, "BEGIN") {
				t.Fatalf("key material printed: %q", out)
			}
		})
	}
	rotated, err := trust.Load(path("rotated"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := trust.Load(path("secret"))
	retired, _ := trust.Load(path("retired"))
	if len(rotated.CAs) != 2 || !rotated.CAs[1].Cert.Equal(first.CAs[0].Cert) || len(rotated.GossipKeys) != 2 {
		t.Fatal("rotate did not keep the old CA and key behind a new primary")
	}
	if len(retired.CAs) != 1 || !retired.CAs[0].Cert.Equal(rotated.CAs[0].Cert) || len(retired.Cross) != 0 || len(retired.GossipKeys) != 1 {
		t.Fatal("retire did not keep exactly the primary")
	}
	for _, name := range []string{"secret", "rotated", "retired"} {
		if info, err := os.Stat(path(name)); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v", name, info.Mode(), err)
		}
	}
}
