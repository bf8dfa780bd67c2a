package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the smallest port picked: clear of well-known and common service ports.
const lowest = 10000

// Ports returns n distinct loopback ports that were free for TCP and UDP when picked.
func Ports(n int) ([]int, error) {
	hi := ephemeralStart() - 1
	if hi-lowest < 10*n {
		return nil, fmt.Errorf("loopback: no room below the ephemeral range (starts at %d) for %d ports", hi+1, n)
	}
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
		if attempts > 50*n {
			return nil, fmt.Errorf("loopback: reserving %d ports: too many taken", n)
		}
		port := lowest + rand.IntN(hi-lowest+1)
		l, err := net.Listen("tcp", Addr(port))
		if err != nil {
			continue
		}
		p, err := net.ListenPacket("udp", Addr(port))
		if err != nil {
			l.Close()
			continue
		}
		tcps, udps = append(tcps, l), append(udps, p)
		ports = append(ports, port)
	}
	return ports, nil
}

// Addrs is Ports as 127.0.0.1:<port> addresses.
func Addrs(n int) ([]string, error) {
	ports, err := Ports(n)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = Addr(p)
	}
	return out, nil
}

// Addr is 127.0.0.1:<port>.
func Addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// ephemeralStart is the first port of the kernel's ephemeral range (Linux: from
// /proc/sys/net/ipv4/ip_local_port_range; elsewhere, or unreadable, the IANA range's 49152).
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 49152
	}
	return parseRangeStart(string(data))
}

func parseRangeStart(s string) int {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return 49152
	}
	lo, err := strconv.Atoi(fields[0])
	if err != nil || lo <= lowest || lo > 65535 {
		return 49152
	}
	return lo
}
