package main

import (
	"flag"
	"io"
	"testing"
)

// TestPackagedConfigLoads reads the configuration file the Debian package installs with the flags
// of palaver serve: every setting it names exists and takes its value.
func TestPackagedConfigLoads(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	build := serveFlags(fs)
	if err := fs.Parse([]string{"--config", "../../deploy/debian/palaver.conf"}); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := build()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/var/lib/palaver" || cfg.HTTPAddr != "127.0.0.1:8080" {
		t.Fatalf("data %q, http %q: the file was not applied", cfg.DataDir, cfg.HTTPAddr)
	}
}
