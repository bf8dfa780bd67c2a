package irctest

import (
	"bufio"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func parseAll(t *testing.T, raw ...string) []ircmsg.Message {
	t.Helper()
	out := make([]ircmsg.Message, 0, len(raw))
	for _, r := range raw {
		m, err := ircmsg.Parse(r)
		if err != nil {
			t.Fatalf("parse %q: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

func TestMatchers(t *testing.T) {
	msgs := parseAll(t,
		":Alice!a@h PRIVMSG #c :hello there",
		":srv 366 bob #c :End of /NAMES list",
		":bob NOTICE bob :psst",
		":srv PONG srv tok",
	)
	for _, tc := range []struct {
		name    string
		command string
		want    []string
		found   int // index in msgs, -1 when none
	}{
		{"command only", "366", nil, 1},
		{"every want string", "PRIVMSG", []string{"#c", "hello"}, 0},
		{"want strings across params", "366", []string{"bob #c"}, 1},
		{"one want string missing", "PRIVMSG", []string{"#c", "bye"}, -1},
		{"no such command", "JOIN", nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := FindMsg(msgs, tc.command, tc.want...)
			if ok != (tc.found >= 0) || (ok && m.String() != msgs[tc.found].String()) {
				t.Fatalf("FindMsg(%s %q) = %s, %v; want index %d", tc.command, tc.want, m.String(), ok, tc.found)
			}
		})
	}
	for _, tc := range []struct {
		msg  int
		nick string
		want bool
	}{{0, "alice", true}, {0, "Alice", true}, {0, "bob", false}, {2, "bob", true}, {1, "srv", true}, {3, "sr", false}} {
		if got := IsFrom(msgs[tc.msg], tc.nick); got != tc.want {
			t.Errorf("IsFrom(%s, %s) = %v", msgs[tc.msg].String(), tc.nick, got)
		}
	}
	if got := Texts(msgs); !slices.Equal(got, []string{"hello there", "psst"}) {
		t.Errorf("Texts = %q", got)
	}
	if got := Commands(msgs); !slices.Equal(got, []string{"PRIVMSG", "366", "NOTICE", "PONG"}) {
		t.Errorf("Commands = %q", got)
	}
}

// replyServer answers each PING token with the lines of replies[token] and then PONG, and every
// other line with nothing, on every connection.
func replyServer(t *testing.T, replies map[string][]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	serve := func(conn net.Conn) {
		defer wg.Done()
		defer conn.Close()
		r := bufio.NewScanner(conn)
		for r.Scan() {
			tok, ok := strings.CutPrefix(strings.TrimSpace(r.Text()), "PING ")
			if !ok {
				continue
			}
			// A drain token is random: answer it with the lines filed under its prefix.
			prefix, _, _ := strings.Cut(tok, "-")
			out := append(slices.Clone(replies[prefix]), ":srv PONG srv "+tok)
			if _, err := conn.Write([]byte(strings.Join(out, "\r\n") + "\r\n")); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go serve(conn)
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func dialAddr(t *testing.T, addr string) *ircclient.Client {
	t.Helper()
	c, err := ircclient.Dial(Ctx(t), addr)
	return closing(t, "dial", c, err)
}

func TestDrainAndBatches(t *testing.T) {
	addr := replyServer(t, map[string][]string{
		"drain": {
			":srv BATCH +b1 chathistory #c",
			"@batch=b1 :alice!a@h PRIVMSG #c :one",
			"@batch=b1 :alice!a@h PRIVMSG #c :two",
			":srv BATCH -b1",
			":bob!b@h PRIVMSG #c :after",
		},
	})
	c := dialAddr(t, addr)
	got := Drain(t, c)
	if want := []string{"BATCH", "PRIVMSG", "PRIVMSG", "BATCH", "PRIVMSG"}; !slices.Equal(Commands(got), want) {
		t.Fatalf("Drain read %q, want commands %q", Lines(got), want)
	}
	c = dialAddr(t, addr)
	SendLines(t, c, "PING drain-x")
	start, body := BatchBody(t, c, "chathistory")
	if start.Param(2) != "#c" || !slices.Equal(Texts(body), []string{"one", "two"}) {
		t.Fatalf("BatchBody = %s %q", start.String(), Lines(body))
	}
	ExpectFrom(t, c, "bob", "PRIVMSG", "#c", "after")
	ExpectSeenParams(t, c, "PRIVMSG", "two")
}

// fatalRecorder is a testing.TB whose Fatalf records the failure and ends the goroutine.
type fatalRecorder struct {
	testing.TB
	failed string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = format
	runtime.Goexit()
}

// failsWith runs f with a recorder in its own goroutine and reports whether it failed.
func failsWith(t *testing.T, f func(tb testing.TB)) bool {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec.failed != ""
}

func TestFailures(t *testing.T) {
	addr := replyServer(t, map[string][]string{
		"untagged": {":srv BATCH +b2 chathistory #c", ":alice!a@h PRIVMSG #c :stray", ":srv BATCH -b2"},
	})
	c := dialAddr(t, addr)
	SendLines(t, c, "PING untagged-1")
	if !failsWith(t, func(tb testing.TB) { BatchBody(tb, c, "chathistory") }) {
		t.Error("a line inside a batch without its tag was accepted")
	}
	if !failsWith(t, func(tb testing.TB) { ExpectSeenParams(tb, c, "PRIVMSG", "never said") }) {
		t.Error("ExpectSeenParams found a line that was never read")
	}
	msgs := parseAll(t, ":alice PRIVMSG #c :hi")
	if !failsWith(t, func(tb testing.TB) { RefuteMsg(tb, msgs, "PRIVMSG", "hi") }) {
		t.Error("RefuteMsg accepted a line it should refute")
	}
	if failsWith(t, func(tb testing.TB) { RefuteMsg(tb, msgs, "PRIVMSG", "bye") }) {
		t.Error("RefuteMsg refused a line it should accept")
	}
}
