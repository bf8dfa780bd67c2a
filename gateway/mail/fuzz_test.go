package mail_test

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/mail"
)

// FuzzValidAddress: an accepted address is one line, within the bound, one @ between a local
// part and a domain, and nothing a header or an SMTP command could be split on.
func FuzzValidAddress(f *testing.F) {
	for _, s := range []string{"bar@example.com", "*", "a@b", "\"a b\"@example.com", "a@[127.0.0.1]", "Bar <bar@example.com>", "a@b\r\nRCPT TO:<x@y>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !mail.ValidAddress(s) {
			return
		}
		local, domain, ok := strings.Cut(s, "@")
		if len(s) > mail.MaxAddress || strings.ContainsAny(s, " \t\r\n<>,;\"") || !ok || local == "" || domain == "" {
			t.Fatalf("accepted %q", s)
		}
	})
}
