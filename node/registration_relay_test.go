package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/mail/mailtest"
)

// TestRegistrationRelayFiles: the relay's password and CAs are read from their files, and a
// missing, empty or unreadable file is an error naming it.
func TestRegistrationRelayFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pw := write("pw", "s3cret\nignored\n")
	empty := write("empty", "\n")
	notPEM := write("ca.txt", "not a certificate")
	ca := write("ca.pem", string(mailtest.SelfSigned(t).PEM))
	for _, tc := range []struct {
		name, pwFile, caFile, wantErr string
	}{
		{name: "none"},
		{name: "password and CAs", pwFile: pw, caFile: ca},
		{name: "missing password file", pwFile: filepath.Join(dir, "nope"), wantErr: "smtp password"},
		{name: "empty password file", pwFile: empty, wantErr: "empty first line"},
		{name: "CA file without a certificate", caFile: notPEM, wantErr: "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SMTPPasswordFile, cfg.SMTPCAFile = tc.pwFile, tc.caFile
			reg, err := registrationRelay(cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tc.pwFile != "") != (reg.Email.Relay.Password == "s3cret") || (tc.caFile != "") != (reg.Email.Relay.RootCAs != nil) {
				t.Errorf("password %q, CAs %v", reg.Email.Relay.Password, reg.Email.Relay.RootCAs)
			}
		})
	}
}
