package testcluster

import (
	"fmt"
	"net"
	"strconv"
)

// reservePorts finds n distinct free loopback ports, each free for both TCP and UDP (memberlist
// gossips over both on one port). The ports are released before returning, so another process
// could take one before the node binds it; on a test machine that is rare, and Restart retries a
// start that failed to bind. Fixed ports are what let a restarted node come back at the address
// its peers and clients know.
func reservePorts(n int) ([]int, error) {
	var tcps []net.Listener
	var udps []net.PacketConn
	defer func() {
		for _, l := range tcps {
			l.Close()
		}
		for _, p := range udps {
			p.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 20*n {
			return nil, fmt.Errorf("reserving %d loopback ports: too many collisions", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		tcps = append(tcps, l)
		port := l.Addr().(*net.TCPAddr).Port
		p, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // the UDP side is taken: keep the TCP listener open so it is not picked again
		}
		udps = append(udps, p)
		ports = append(ports, port)
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
