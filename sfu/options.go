package sfu

import (
	"flag"
	"fmt"
	"net"
	"strings"
)

// DefaultUDPAddr is the UDP address of the ICE mux of `palaver serve`.
const DefaultUDPAddr = ":7882"

// Options are the command-line settings of the forwarding unit.
type Options struct {
	// Off disables calls: the forwarding unit does not start, health reports av:false and every
	// AV endpoint answers 503.
	Off bool
	// UDPAddr is the one UDP address every call's media uses (ICE through a mux). A loopback
	// host gathers only loopback candidates; port 0 lets the system choose. Empty: ":0".
	UDPAddr string
	// PublicIPs replace the host candidates' address in what clients are told (1:1 NAT).
	PublicIPs []string
	// AllowPrivateCandidates accepts clients' ICE candidates at loopback, private and
	// link-local addresses (Config.AllowPrivateCandidates).
	AllowPrivateCandidates bool
}

// Defaults returns the options of `palaver serve`.
func Defaults() Options { return Options{UDPAddr: DefaultUDPAddr} }

// Flags declares --no-av, --av-udp-addr and --av-public-ip on fs, with o's values as defaults.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Off, "no-av", o.Off, "disable calls (the AV endpoints answer 503)")
	fs.StringVar(&o.UDPAddr, "av-udp-addr", o.UDPAddr, "UDP address of all call media (ICE through one port)")
	fs.BoolVar(&o.AllowPrivateCandidates, "av-allow-private-candidates", o.AllowPrivateCandidates,
		"accept clients' ICE candidates at loopback, private and link-local addresses (a LAN deployment; otherwise dropped)")
	fs.Func("av-public-ip", "public IP address announced for call media instead of the host's (1:1 NAT); repeatable or comma-separated",
		func(v string) error {
			for _, ip := range strings.Split(v, ",") {
				ip = strings.TrimSpace(ip)
				if net.ParseIP(ip) == nil {
					return fmt.Errorf("not an IP address: %q", ip)
				}
				o.PublicIPs = append(o.PublicIPs, ip)
			}
			return nil
		})
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Off {
		return nil
	}
	if o.UDPAddr != "" {
		if _, err := net.ResolveUDPAddr("udp", o.UDPAddr); err != nil {
			return fmt.Errorf("--av-udp-addr: %w", err)
		}
	}
	for _, ip := range o.PublicIPs {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("--av-public-ip: not an IP address: %q", ip)
		}
	}
	return nil
}
