package irc_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/mail"
	"github.com/palaver-chat/palaver/gateway/mail/mailtest"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
)

var mailedCode = regexp.MustCompile(`VERIFY (\S+) (\d{8})`)

// codeFor waits for the registration e-mail to addr and returns the account and code it names.
func codeFor(t *testing.T, relay *mailtest.Server, addr string) (account, code string) {
	t.Helper()
	select {
	case m := <-relay.Messages:
		if m.To != addr || m.From != "irc@palaver.test" || m.Header.Get("To") != addr {
			t.Fatalf("mail to %q from %q, want to %q", m.To, m.From, addr)
		}
		got := mailedCode.FindStringSubmatch(m.Body)
		if got == nil {
			t.Fatalf("no code in %q", m.Body)
		}
		return got[1], got[2]
	case <-testCtx(t).Done():
		t.Fatal("no registration e-mail")
	}
	return "", ""
}

// verifyReply sends VERIFY and returns the VERIFY or FAIL VERIFY line that answers it.
func verifyReply(t *testing.T, c *ircclient.Client, line string) ircmsg.Message {
	t.Helper()
	sendLines(t, c, line)
	return irctest.ExpectMatch(t, c, "the answer to "+line, func(m ircmsg.Message) bool {
		return m.Command == "VERIFY" || (m.Command == "FAIL" && m.Param(0) == "VERIFY")
	})
}

// TestIRCAccountRegistrationEmail: with an SMTP relay configured, draft/account-registration
// advertises email-required, REGISTER needs a valid address and mails a code to it over SMTP,
// and only VERIFY with that code creates the account; codes expire and wrong ones are limited.
func TestIRCAccountRegistrationEmail(t *testing.T) {
	relay := mailtest.Start(t, mailtest.Options{Reject: "@refused.example"})
	clock := &testClock{}
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.Clock = clock.Now
		c.AccountRegistration.Enabled, c.AccountRegistration.BeforeConnect = true, true
		c.AccountRegistration.PerAddressPerHour = 50
		c.AccountRegistration.Email.Relay = mail.Config{Addr: relay.Addr, From: "irc@palaver.test", TLS: mail.TLSNone}
		c.AccountRegistration.Email.CodeTTL, c.AccountRegistration.Email.MaxAttempts = 10*time.Minute, 3
	})

	t.Run("the cap value says email-required", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302")
		_, caps := expectCapLS(t, c)
		if !slices.Contains(caps, "draft/account-registration=before-connect,email-required") {
			t.Fatalf("caps %q", caps)
		}
	})

	t.Run("REGISTER without a valid address is INVALID_EMAIL and mails nothing", func(t *testing.T) {
		c, _ := guest(t, n, "nomail", "draft/account-registration")
		for _, email := range []string{"*", "nomail", "<nomail@example.com>", "a@b@c", "nomail@example.com,x@example.com"} {
			m := registerReply(t, c, "REGISTER * "+email+" shivarampassphrase")
			if m.Command != "FAIL" || m.Param(1) != "INVALID_EMAIL" || m.Param(2) != "nomail" {
				t.Errorf("REGISTER with %q: %q", email, m.String())
			}
		}
		syncClient(t, c)
		select {
		case m := <-relay.Messages:
			t.Fatalf("mailed %+v", m)
		default:
		}
	})

	t.Run("after connecting: the mailed code creates the account", func(t *testing.T) {
		c, _ := guest(t, n, "bar", "draft/account-registration")
		m := registerReply(t, c, "REGISTER * bar@example.com shivarampassphrase")
		if m.Command != "REGISTER" || m.Param(0) != "VERIFICATION_REQUIRED" || m.Param(1) != "bar" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		account, code := codeFor(t, relay, "bar@example.com")
		if account != "bar" {
			t.Fatalf("mail for %q", account)
		}
		// Not an account yet.
		if lines := plainLogin(t, dial(t, n), "", "bar", "shivarampassphrase"); loggedInAs(lines) != "" {
			t.Fatal("the account exists before VERIFY")
		}
		wrong := "00000000"
		if code == wrong {
			wrong = "11111111"
		}
		if m := verifyReply(t, c, "VERIFY bar "+wrong); m.Command != "FAIL" || m.Param(1) != "INVALID_CODE" {
			t.Fatalf("a wrong code: %q", m.String())
		}
		m = verifyReply(t, c, "VERIFY bar "+code)
		if m.Command != "VERIFY" || m.Param(0) != "SUCCESS" || m.Param(1) != "bar" {
			t.Fatalf("VERIFY: %q", m.String())
		}
		expect(t, c, "NOTICE", "*")
		if loggedInAs(c.Seen()) != "did:web:palaver.test:u:bar" {
			t.Fatalf("not logged in: %v", lastSeen(c))
		}
		if m := verifyReply(t, c, "VERIFY bar "+code); m.Command != "FAIL" || m.Param(1) != "ALREADY_AUTHENTICATED" {
			t.Errorf("a second VERIFY: %q", m.String())
		}
		if lines := scramLogin(t, dial(t, n), "bar", "shivarampassphrase"); loggedInAs(lines) != "did:web:palaver.test:u:bar" {
			t.Fatalf("SCRAM login of the new account: %v", lines)
		}
	})

	t.Run("before connecting, and VERIFY from a later connection", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302", "CAP REQ :draft/account-registration", "NICK early")
		m := registerReply(t, c, "REGISTER early early@example.com shivarampassphrase")
		if m.Param(0) != "VERIFICATION_REQUIRED" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		_, code := codeFor(t, relay, "early@example.com")
		c.Close()
		d := dial(t, n)
		sendLines(t, d, "CAP LS 302", "CAP REQ :draft/account-registration", "NICK other")
		if m := verifyReply(t, d, "VERIFY early "+code); m.Param(1) != "ACCOUNT_NAME_MUST_BE_NICK" {
			t.Fatalf("VERIFY under another nick: %q", m.String())
		}
		sendLines(t, d, "NICK early")
		if m := verifyReply(t, d, "VERIFY early "+code); m.Command != "VERIFY" || m.Param(0) != "SUCCESS" {
			t.Fatalf("VERIFY: %q", m.String())
		}
		w := finishRegistration(t, d, "early")
		if !strings.Contains(w.Param(1), "did:web:palaver.test:u:early") {
			t.Errorf("welcome %q", w.String())
		}
	})

	t.Run("wrong codes are limited", func(t *testing.T) {
		c, _ := guest(t, n, "guess", "draft/account-registration")
		registerReply(t, c, "REGISTER * guess@example.com shivarampassphrase")
		_, code := codeFor(t, relay, "guess@example.com")
		for i, want := range []string{"not the code", "not the code", "Too many"} {
			wrong := strings.Repeat(string(rune('1'+i)), 8)
			if wrong == code {
				wrong = "0" + wrong[1:]
			}
			if m := verifyReply(t, c, "VERIFY guess "+wrong); m.Param(1) != "INVALID_CODE" || !strings.Contains(m.Param(3), want) {
				t.Fatalf("wrong code %d: %q", i+1, m.String())
			}
		}
		if m := verifyReply(t, c, "VERIFY guess "+code); m.Param(1) != "INVALID_CODE" {
			t.Fatalf("the right code after too many wrong ones: %q", m.String())
		}
	})

	t.Run("a code expires", func(t *testing.T) {
		c, _ := guest(t, n, "late", "draft/account-registration")
		registerReply(t, c, "REGISTER * late@example.com shivarampassphrase")
		_, code := codeFor(t, relay, "late@example.com")
		clock.Advance(11 * time.Minute)
		if m := verifyReply(t, c, "VERIFY late "+code); m.Param(1) != "INVALID_CODE" {
			t.Fatalf("an expired code: %q", m.String())
		}
	})

	t.Run("another connection's pending registration holds the name", func(t *testing.T) {
		c, _ := guest(t, n, "held", "draft/account-registration")
		registerReply(t, c, "REGISTER * held@example.com shivarampassphrase")
		codeFor(t, relay, "held@example.com")
		quit(t, n, c, "held")
		d, _ := guest(t, n, "held", "draft/account-registration")
		if m := registerReply(t, d, "REGISTER * other@example.com shivarampassphrase"); m.Param(1) != "ACCOUNT_EXISTS" {
			t.Fatalf("REGISTER of a held name: %q", m.String())
		}
	})

	t.Run("an address the relay refuses is UNACCEPTABLE_EMAIL", func(t *testing.T) {
		c, _ := guest(t, n, "refused", "draft/account-registration")
		if m := registerReply(t, c, "REGISTER * refused@refused.example shivarampassphrase"); m.Param(1) != "UNACCEPTABLE_EMAIL" {
			t.Fatalf("REGISTER: %q", m.String())
		}
		if m := verifyReply(t, c, "VERIFY refused 12345678"); m.Param(1) != "INVALID_CODE" {
			t.Fatalf("VERIFY after a refused address: %q", m.String())
		}
	})
}
