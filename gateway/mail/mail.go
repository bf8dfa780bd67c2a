// Package mail sends short plain-text e-mails through an SMTP relay the operator configures (its
// address, sender, optional login, and TLS: implicit, STARTTLS or none), with net/smtp. The IRC
// gateway uses it for the verification codes of account registration; the package keeps no
// state and no queue: a Send either hands the message to the relay or reports why it could not.
package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"
)

// TLS modes of a relay.
const (
	TLSStartTLS = "starttls" // plain connection upgraded with STARTTLS, which the relay must offer
	TLSImplicit = "tls"      // TLS from the first byte (submission over TLS, port 465)
	TLSNone     = "none"     // no TLS: a relay on loopback or a trusted network only
)

// MaxAddress is the longest address accepted (RFC 5321's limit on a path).
const MaxAddress = 254

// Config is an SMTP relay.
type Config struct {
	Addr     string // host:port; "" means no relay
	From     string // the sender address, also the envelope sender
	Username string // SMTP AUTH PLAIN login; "" logs in as nobody
	Password string
	TLS      string         // TLSStartTLS (also when empty), TLSImplicit or TLSNone
	RootCAs  *x509.CertPool // the CAs the relay's certificate is checked against; nil: the system's
	Timeout  time.Duration  // of one delivery; 0: 30 s
}

// ErrRejected wraps the relay's refusal of a recipient (a permanent 5xx reply to RCPT TO): the
// address will not work, trying again will not help.
var ErrRejected = errors.New("mail: the relay refused the recipient")

// Configured reports whether a relay is set.
func (c Config) Configured() bool { return c.Addr != "" }

// Check reports everything wrong with the configuration, nil when it can be used.
func (c Config) Check() error {
	var problems []string
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		problems = append(problems, fmt.Sprintf("relay address %q: want host:port", c.Addr))
	}
	if !ValidAddress(c.From) {
		problems = append(problems, fmt.Sprintf("sender %q is not an e-mail address", c.From))
	}
	switch c.TLS {
	case "", TLSStartTLS, TLSImplicit, TLSNone:
	default:
		problems = append(problems, fmt.Sprintf("TLS mode %q: want %s, %s or %s", c.TLS, TLSStartTLS, TLSImplicit, TLSNone))
	}
	if c.Password != "" && c.Username == "" {
		problems = append(problems, "a password without a user name")
	}
	if len(problems) > 0 {
		return errors.New("mail: " + strings.Join(problems, "; "))
	}
	return nil
}

// ValidAddress reports whether s is one bare e-mail address (local@domain, no display name, no
// comments, no line breaks), at most MaxAddress bytes.
func ValidAddress(s string) bool {
	if s == "" || len(s) > MaxAddress || strings.ContainsAny(s, " \t\r\n<>,;\"") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return false
	}
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && domain != "" && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// Send delivers a plain-text message to one address through the relay.
func (c Config) Send(ctx context.Context, to, subject, body string) error {
	if !ValidAddress(to) {
		return fmt.Errorf("mail: recipient %q is not an e-mail address", to)
	}
	if strings.ContainsAny(subject, "\r\n") {
		return errors.New("mail: a subject on more than one line")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("mail: relay address %q: %w", c.Addr, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("mail: connecting to the relay: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(dl); err != nil {
			conn.Close()
			return fmt.Errorf("mail: %w", err)
		}
	}
	tlsConf := &tls.Config{ServerName: host, RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
	if c.TLS == TLSImplicit {
		conn = tls.Client(conn, tlsConf)
	}
	cl, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("mail: greeting of the relay: %w", err)
	}
	defer cl.Close()
	if c.TLS == "" || c.TLS == TLSStartTLS {
		if ok, _ := cl.Extension("STARTTLS"); !ok {
			return errors.New("mail: the relay does not offer STARTTLS")
		}
		if err := cl.StartTLS(tlsConf); err != nil {
			return fmt.Errorf("mail: STARTTLS: %w", err)
		}
	}
	if c.Username != "" {
		if err := cl.Auth(smtp.PlainAuth("", c.Username, c.Password, host)); err != nil {
			return fmt.Errorf("mail: logging in to the relay: %w", err)
		}
	}
	if err := cl.Mail(c.From); err != nil {
		return fmt.Errorf("mail: MAIL FROM: %w", err)
	}
	if err := cl.Rcpt(to); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) && te.Code >= 500 {
			return fmt.Errorf("%w: %w", ErrRejected, err)
		}
		return fmt.Errorf("mail: RCPT TO: %w", err)
	}
	w, err := cl.Data()
	if err != nil {
		return fmt.Errorf("mail: DATA: %w", err)
	}
	if _, err := w.Write(c.message(to, subject, body, time.Now())); err != nil {
		return fmt.Errorf("mail: sending the message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("mail: the relay did not accept the message: %w", err)
	}
	return cl.Quit()
}

// message is the RFC 5322 message: headers, then the body with CRLF line ends.
func (c Config) message(to, subject, body string, now time.Time) []byte {
	id := make([]byte, 12)
	rand.Read(id)
	_, domain, _ := strings.Cut(c.From, "@")
	var b strings.Builder
	for _, h := range [][2]string{
		{"From", c.From}, {"To", to}, {"Subject", encodeHeader(subject)}, {"Date", now.UTC().Format(time.RFC1123Z)},
		{"Message-ID", "<" + hex.EncodeToString(id) + "@" + domain + ">"}, {"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"}, {"Content-Transfer-Encoding", "8bit"},
	} {
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	b.WriteString("\r\n")
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		b.WriteString(line + "\r\n")
	}
	return []byte(b.String())
}

// encodeHeader encodes a header value that is not plain ASCII (RFC 2047).
func encodeHeader(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}
