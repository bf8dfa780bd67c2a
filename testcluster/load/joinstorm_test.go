package load

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// startFailingJoinServer is an IRC server that registers anyone and answers every second JOIN
// with FAIL JOIN TEMPORARILY_UNAVAILABLE, the others with an end of NAMES.
func startFailingJoinServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	joins := 0
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				nick := "*"
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 0 {
						continue
					}
					var reply string
					switch strings.ToUpper(f[0]) {
					case "CAP":
						if len(f) > 1 && f[1] == "LS" {
							reply = ":s CAP * LS :"
						}
					case "NICK":
						nick = f[1]
					case "USER":
						reply = ":s 001 " + nick + " :hi"
					case "JOIN":
						mu.Lock()
						joins++
						fail := joins%2 == 0
						mu.Unlock()
						reply = ":s 366 " + nick + " " + f[1] + " :End of /NAMES list"
						if fail {
							reply = ":s FAIL JOIN TEMPORARILY_UNAVAILABLE " + f[1] + " :The join's outcome is unknown"
						}
					case "QUIT":
						return
					}
					if reply != "" {
						c.Write([]byte(reply + "\r\n"))
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// FAIL JOIN answers are counted, end those clients' wait, and make the run not a success.
func TestJoinStormCountsFailJoin(t *testing.T) {
	addr := startFailingJoinServer(t)
	res, err := RunJoinStorm(testContext(t), Target{IRCAddr: addr}, JoinStormConfig{Clients: 10, SetupConcurrency: 4, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Joined != 5 || res.Failed != 5 || res.Killed != 0 || res.Success {
		t.Fatalf("joined %d, failed %d, killed %d, success %v", res.Joined, res.Failed, res.Killed, res.Success)
	}
	run := res.Run()
	notes := strings.Join(run.Notes, "\n")
	if !strings.Contains(notes, "NOT A SUCCESS") || !strings.Contains(notes, "FAIL JOIN TEMPORARILY_UNAVAILABLE") {
		t.Errorf("notes %q", notes)
	}
	found := false
	for _, m := range run.Measurements {
		found = found || (m.Name == "FAIL JOIN" && m.Value == 5)
	}
	if !found {
		t.Errorf("no FAIL JOIN measurement of 5 in %+v", run.Measurements)
	}
}
