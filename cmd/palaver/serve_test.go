package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
)

// Settings come from the command line, then PALAVER_* variables, then the --config file.
func TestServeSettingsPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "palaver.conf")
	if err := os.WriteFile(file, []byte("# a comment\nserver-name = file.example\nraft-commit-timeout = 7ms\noper-did = did:plc:fromfile\npprof-addr = 127.0.0.1:6061\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c node.Config)
	}{
		{"defaults", nil, nil, func(t *testing.T, c node.Config) {
			want := node.DefaultConfig()
			want.Version = version
			// Printed, so that an empty list from a flag equals the default's nil one.
			if fmt.Sprintf("%+v", c) != fmt.Sprintf("%+v", want) {
				t.Fatalf("defaults:\n%+v\nwant node.DefaultConfig:\n%+v", c, want)
			}
			if c.Raft != raft.MustProfile(raft.ProfileProduction) || c.Raft.CommitTimeout != 2*time.Millisecond {
				t.Fatalf("defaults: raft timing %+v, want production", c.Raft)
			}
		}},
		{"test profile", []string{"--raft-profile", "test"}, nil, func(t *testing.T, c node.Config) {
			if c.Raft != raft.MustProfile(raft.ProfileTest) {
				t.Fatalf("raft timing %+v, want the test profile", c.Raft)
			}
		}},
		{"single timeouts override the profile, in any order", []string{"--raft-heartbeat-timeout", "100ms", "--raft-profile", "test"},
			map[string]string{"PALAVER_RAFT_ELECTION_TIMEOUT": "50ms"}, func(t *testing.T, c node.Config) {
				want := raft.Timing{HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
					LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 10 * time.Millisecond}
				if c.Raft != want {
					t.Fatalf("raft timing %+v, want %+v", c.Raft, want)
				}
			}},
		{"file", []string{"--config", file}, nil, func(t *testing.T, c node.Config) {
			if c.ServerName != "file.example" || c.Raft.CommitTimeout != 7*time.Millisecond || c.PprofAddr != "127.0.0.1:6061" ||
				!slices.Equal(c.OperDIDs, []string{"did:plc:fromfile"}) {
				t.Fatalf("file: %+v", c)
			}
		}},
		{"environment over file", []string{"--config", file},
			map[string]string{"PALAVER_SERVER_NAME": "env.example", "PALAVER_OPER_DID": "did:plc:a,did:plc:b"},
			func(t *testing.T, c node.Config) {
				if c.ServerName != "env.example" || c.Raft.CommitTimeout != 7*time.Millisecond ||
					!slices.Equal(c.OperDIDs, []string{"did:plc:a", "did:plc:b"}) {
					t.Fatalf("env over file: server %q commit %v oper-dids %v", c.ServerName, c.Raft.CommitTimeout, c.OperDIDs)
				}
			}},
		{"tagmsg persist list", []string{"--tagmsg-persist", " +a.example/keep , +keep"}, nil, func(t *testing.T, c node.Config) {
			if !slices.Equal(c.TagmsgPersist, []string{"+a.example/keep", "+keep"}) {
				t.Fatalf("tagmsg persist %q", c.TagmsgPersist)
			}
		}},
		{"tagmsg persist emptied", nil, map[string]string{"PALAVER_TAGMSG_PERSIST": ""}, func(t *testing.T, c node.Config) {
			if len(c.TagmsgPersist) != 0 {
				t.Fatalf("tagmsg persist %q, want none", c.TagmsgPersist)
			}
		}},
		{"terms of service file", []string{"--tos", "/srv/palaver/terms.txt"}, nil, func(t *testing.T, c node.Config) {
			if c.TOSFile != "/srv/palaver/terms.txt" {
				t.Fatalf("tos %q", c.TOSFile)
			}
		}},
		{"command line over both", []string{"--config", file, "--server-name", "cli.example", "--raft-commit-timeout", "1ms"},
			map[string]string{"PALAVER_SERVER_NAME": "env.example"},
			func(t *testing.T, c node.Config) {
				if c.ServerName != "cli.example" || c.Raft.CommitTimeout != time.Millisecond {
					t.Fatalf("cli: server %q commit %v", c.ServerName, c.Raft.CommitTimeout)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			build := serveFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse: %v", err)
			}
			cfg, _, err := build()
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			tc.check(t, cfg)
		})
	}
}

func TestServeSettingsRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(bad, []byte("no-such-setting = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"unknown file setting", []string{"--config", bad}},
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "absent.conf")}},
		{"bad log level", []string{"--log-level", "loud"}},
		{"key lifetime under a day", []string{"--signing-key-lifetime-days", "0"}},
		{"channel expiry of zero days", []string{"--channel-expiry-days", "0"}},
		{"founded channel expiry below -1", []string{"--founded-channel-expiry-days", "-2"}},
		{"oper without password", []string{"--oper", "root"}},
		{"unknown raft profile", []string{"--raft-profile", "fast"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			build := serveFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse: %v", err)
			}
			if _, _, err := build(); err == nil {
				t.Fatalf("%v accepted", tc.args)
			}
		})
	}
}
