package node

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floodChildEnv names the cluster ports the child process floods.
const floodChildEnv = "PALAVER_TEST_FLOOD_PORTS"

// TestClusterPortFloodHelper is the attacker of TestClusterPortFlood, run as a child process so
// that its descriptors are its own: it opens idle connections to each port, says "ready" and
// holds them until its input ends.
func TestClusterPortFloodHelper(t *testing.T) {
	ports := os.Getenv(floodChildEnv)
	if ports == "" {
		t.Skip("the child process of TestClusterPortFlood")
	}
	per, _ := strconv.Atoi(os.Getenv(floodChildEnv + "_EACH"))
	var conns []net.Conn
	for _, addr := range strings.Split(ports, ",") {
		for range per {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				continue // a full backlog; the flood goes on with the others
			}
			conns = append(conns, c)
		}
	}
	fmt.Printf("ready %d\n", len(conns))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, c := range conns {
		c.Close()
	}
}

// TestClusterPortFlood: thousands of idle connections to the Raft, gossip and cluster ports of a
// node with 512 descriptors must not stop its public IRC and health from answering.
func TestClusterPortFlood(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	low := old
	low.Cur = 512
	if old.Max < 4096 {
		t.Skipf("hard descriptor limit %d: the attacker needs more", old.Max)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })

	n := startNode(t, t.TempDir(), func(c *Config) {
		c.NodeName = "node-a.flood"
		c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
	})
	ports := strings.Join([]string{n.raft.Addr(), n.raft.GossipAddr(), n.raft.ClusterAddr()}, ",")

	child := exec.Command(os.Args[0], "-test.run=^TestClusterPortFloodHelper$", "-test.count=1")
	child.Env = append(os.Environ(), floodChildEnv+"="+ports, floodChildEnv+"_EACH=1200")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = child.Wait()
	})
	out := bufio.NewScanner(stdout)
	ready := ""
	for out.Scan() {
		if line := out.Text(); strings.HasPrefix(line, "ready ") {
			ready = line
			break
		}
	}
	if ready == "" {
		t.Fatal("the attacker process ended before it was ready")
	}
	t.Log("attacker:", ready, "connections")

	// Health answers.
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + n.HTTPAddr() + "/api/v1/health")
	if err != nil {
		t.Fatalf("health during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("health during the flood: %d", resp.StatusCode)
	}
	// IRC registers.
	c, err := net.DialTimeout("tcp", n.IRCAddr(), 5*time.Second)
	if err != nil {
		t.Fatalf("IRC during the flood: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "NICK flooded\r\nUSER flooded 0 * :f\r\n")
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("IRC registration during the flood: %v", err)
		}
		if strings.Contains(line, " 001 ") {
			break
		}
	}
}
