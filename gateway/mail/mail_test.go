package mail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/mail"
	"github.com/palaver-chat/palaver/gateway/mail/mailtest"
)

func TestValidAddress(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"bar@example.com", true},
		{"first.last+tag@sub.example.org", true},
		{"*", false},
		{"", false},
		{"bar", false},
		{"@example.com", false},
		{"bar@", false},
		{"Bar <bar@example.com>", false},
		{"bar@example.com\r\nBcc: x@example.com", false},
		{"a@b@c", false},
		{"bar@.example.com", false},
		{"a,b@example.com", false},
		{strings.Repeat("a", 250) + "@b.cd", false},
	} {
		if got := mail.ValidAddress(tc.addr); got != tc.ok {
			t.Errorf("ValidAddress(%q) = %v, want %v", tc.addr, got, tc.ok)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	good := mail.Config{Addr: "127.0.0.1:25", From: "irc@example.com"}
	for _, tc := range []struct {
		name string
		mut  func(*mail.Config)
		ok   bool
	}{
		{"good", func(*mail.Config) {}, true},
		{"implicit TLS", func(c *mail.Config) { c.TLS = mail.TLSImplicit }, true},
		{"no port", func(c *mail.Config) { c.Addr = "127.0.0.1" }, false},
		{"bad sender", func(c *mail.Config) { c.From = "irc" }, false},
		{"bad TLS mode", func(c *mail.Config) { c.TLS = "ssl" }, false},
		{"password without user", func(c *mail.Config) { c.Password = "x" }, false},
	} {
		c := good
		tc.mut(&c)
		if err := c.Check(); (err == nil) != tc.ok {
			t.Errorf("%s: Check() = %v", tc.name, err)
		}
	}
}

// TestSend delivers through a receiver on loopback in each TLS mode, with and without a login,
// and checks what arrives; refusals come back as errors.
func TestSend(t *testing.T) {
	cert := mailtest.SelfSigned(t)
	srvTLS, pool := cert.TLS, cert.Pool
	for _, tc := range []struct {
		name    string
		opts    mailtest.Options
		cfg     mail.Config
		to      string
		wantErr string
		rejects bool
		wantTLS bool
	}{
		{name: "plain relay", cfg: mail.Config{TLS: mail.TLSNone}, to: "bar@example.com"},
		{name: "STARTTLS with a login", opts: mailtest.Options{TLS: srvTLS, Username: "u", Password: "p"},
			cfg: mail.Config{RootCAs: pool, Username: "u", Password: "p"}, to: "bar@example.com", wantTLS: true},
		{name: "implicit TLS", opts: mailtest.Options{TLS: srvTLS, Implicit: true},
			cfg: mail.Config{TLS: mail.TLSImplicit, RootCAs: pool}, to: "bar@example.com", wantTLS: true},
		{name: "STARTTLS required but not offered", cfg: mail.Config{TLS: mail.TLSStartTLS}, to: "bar@example.com", wantErr: "STARTTLS"},
		{name: "an untrusted certificate", opts: mailtest.Options{TLS: srvTLS}, cfg: mail.Config{}, to: "bar@example.com", wantErr: "certificate"},
		{name: "wrong login", opts: mailtest.Options{TLS: srvTLS, Username: "u", Password: "p"},
			cfg: mail.Config{RootCAs: pool, Username: "u", Password: "q"}, to: "bar@example.com", wantErr: "logging in"},
		{name: "a refused recipient", opts: mailtest.Options{Reject: "@nowhere.example"}, cfg: mail.Config{TLS: mail.TLSNone},
			to: "bar@nowhere.example", rejects: true},
		{name: "not an address", cfg: mail.Config{TLS: mail.TLSNone}, to: "bar", wantErr: "not an e-mail address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mailtest.Start(t, tc.opts)
			cfg := tc.cfg
			cfg.Addr, cfg.From, cfg.Timeout = srv.Addr, "irc@palaver.example", 10*time.Second
			err := cfg.Send(context.Background(), tc.to, "Your code ✓", "Code: 1234\n.leading dot\nend")
			switch {
			case tc.rejects:
				if !errors.Is(err, mail.ErrRejected) {
					t.Fatalf("Send = %v, want ErrRejected", err)
				}
				return
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Send = %v, want an error about %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("Send: %v", err)
			}
			m := <-srv.Messages
			if m.From != "irc@palaver.example" || m.To != tc.to || m.TLS != tc.wantTLS || m.Login != tc.opts.Username {
				t.Errorf("envelope %+v", m)
			}
			if m.Header.Get("To") != tc.to || m.Header.Get("Subject") != "=?utf-8?q?Your_code_=E2=9C=93?=" || m.Header.Get("Message-Id") == "" {
				t.Errorf("headers %v", m.Header)
			}
			if m.Body != "Code: 1234\n.leading dot\nend\n" {
				t.Errorf("body %q", m.Body)
			}
		})
	}
}
