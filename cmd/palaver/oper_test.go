package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestOperCredentials(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("from-file"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# operators\n\nfile:"+string(hash)+"\n")
	plain := write("plain", "file:hunter2\n")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    map[string]string // name → password that must match
		wantErr string
	}{
		{name: "plain --oper is hashed", args: []string{"--oper", "cli:hunter2"}, want: map[string]string{"cli": "hunter2"}},
		{name: "hashed --oper", args: []string{"--oper", "cli:" + string(hash)}, want: map[string]string{"cli": "from-file"}},
		{name: "PALAVER_OPER with hashes", env: map[string]string{"PALAVER_OPER": "a:" + string(hash) + ",b:" + string(hash)},
			want: map[string]string{"a": "from-file", "b": "from-file"}},
		{name: "--oper-file", args: []string{"--oper-file", good}, want: map[string]string{"file": "from-file"}},
		{name: "--oper-file with a plain password", args: []string{"--oper-file", plain}, wantErr: "line 1: want name:bcrypt-hash"},
		{name: "missing --oper-file", args: []string{"--oper-file", filepath.Join(dir, "none")}, wantErr: "--oper-file"},
		{name: "--oper without a password", args: []string{"--oper", "root:"}, wantErr: "want name:bcrypt-hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			build := serveFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatalf("parse: %v", err)
			}
			cfg, _, err := build()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("build error %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if len(cfg.Opers) != len(tt.want) {
				t.Fatalf("opers %v, want %d", cfg.Opers, len(tt.want))
			}
			for name, password := range tt.want {
				h := cfg.Opers[name]
				if strings.Contains(h, password) || bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) != nil {
					t.Errorf("oper %s: %q is not a bcrypt hash of its password", name, h)
				}
			}
		})
	}
}
