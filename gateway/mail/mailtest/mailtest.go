// Package mailtest is an SMTP receiver for tests: it listens on loopback, speaks enough of SMTP
// (EHLO, STARTTLS, AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT) for net/smtp and gateway/mail,
// and hands each message it accepts to the test.
package mailtest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
)

// Message is one message the server accepted.
type Message struct {
	From, To string
	TLS      bool   // it came over TLS (STARTTLS)
	Login    string // the AUTH PLAIN user, "" without a login
	Header   mail.Header
	Body     string // with LF line ends, dot-stuffing undone
}

// Options configure a Server.
type Options struct {
	TLS      *tls.Config // offer STARTTLS with this configuration; nil: not offered
	Implicit bool        // with TLS: speak TLS from the first byte instead of offering STARTTLS
	Username string      // require AUTH PLAIN with these credentials; "": no login
	Password string
	Reject   string // RCPT TO of an address with this suffix gets 550
}

// Server is a running receiver; Messages yields what it accepted.
type Server struct {
	Addr     string
	Messages chan Message
	opts     Options
	ln       net.Listener
	wg       sync.WaitGroup
}

// Start starts a receiver on a loopback port, stopped when tb ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	if opts.Implicit && opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	s := &Server{Addr: ln.Addr().String(), Messages: make(chan Message, 16), opts: opts, ln: ln}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.session(conn)
		}()
	}
}

// session runs one SMTP conversation.
func (s *Server) session(conn net.Conn) {
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	reply := func(line string) bool {
		w.WriteString(line + "\r\n")
		return w.Flush() == nil
	}
	_, secure := conn.(*tls.Conn)
	msg := Message{TLS: secure}
	reply("220 mailtest ready")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			ext := []string{"250-mailtest"}
			if s.opts.TLS != nil && !secure {
				ext = append(ext, "250-STARTTLS")
			}
			if s.opts.Username != "" {
				ext = append(ext, "250-AUTH PLAIN")
			}
			ext = append(ext, "250 8BITMIME")
			reply(strings.Join(ext, "\r\n"))
		case "STARTTLS":
			if s.opts.TLS == nil || secure {
				reply("502 no")
				continue
			}
			reply("220 go ahead")
			tc := tls.Server(conn, s.opts.TLS)
			if tc.Handshake() != nil {
				return
			}
			conn, secure = tc, true
			r, w = bufio.NewReader(tc), bufio.NewWriter(tc)
			msg = Message{TLS: true}
		case "AUTH":
			mech, payload, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(payload)
			parts := strings.Split(string(raw), "\x00")
			if !strings.EqualFold(mech, "PLAIN") || err != nil || len(parts) != 3 ||
				parts[1] != s.opts.Username || parts[2] != s.opts.Password {
				reply("535 bad credentials")
				continue
			}
			msg.Login = parts[1]
			reply("235 ok")
		case "MAIL":
			if s.opts.Username != "" && msg.Login == "" {
				reply("530 authentication required")
				continue
			}
			from, ok := path(arg, "FROM:")
			if !ok {
				reply("501 syntax")
				continue
			}
			msg.From = from
			reply("250 ok")
		case "RCPT":
			to, ok := path(arg, "TO:")
			if !ok || msg.From == "" {
				reply("503 MAIL first, then RCPT TO:<address>")
				continue
			}
			if s.opts.Reject != "" && strings.HasSuffix(to, s.opts.Reject) {
				reply("550 no such user")
				continue
			}
			msg.To = to
			reply("250 ok")
		case "DATA":
			reply("354 go ahead")
			var body []string
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				l = strings.TrimRight(l, "\r\n")
				if l == "." {
					break
				}
				body = append(body, strings.TrimPrefix(l, "."))
			}
			m, err := mail.ReadMessage(strings.NewReader(strings.Join(body, "\n") + "\n"))
			if err != nil {
				reply("554 bad message")
				continue
			}
			var b strings.Builder
			if _, err := bufio.NewReader(m.Body).WriteTo(&b); err != nil {
				return
			}
			msg.Header, msg.Body = m.Header, b.String()
			msg.TLS = secure
			s.Messages <- msg
			msg = Message{TLS: secure, Login: msg.Login}
			reply("250 queued")
		case "RSET":
			msg = Message{TLS: secure, Login: msg.Login}
			reply("250 ok")
		case "NOOP":
			reply("250 ok")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("500 unknown command")
		}
	}
}

// path is the address of "FROM:<a@b> params" or "TO:<a@b>" (prefix case-insensitive).
func path(arg, prefix string) (string, bool) {
	if len(arg) < len(prefix) || !strings.EqualFold(arg[:len(prefix)], prefix) {
		return "", false
	}
	addr, _, _ := strings.Cut(strings.TrimSpace(arg[len(prefix):]), " ")
	if len(addr) < 2 || addr[0] != '<' || addr[len(addr)-1] != '>' {
		return "", false
	}
	return addr[1 : len(addr)-1], true
}
