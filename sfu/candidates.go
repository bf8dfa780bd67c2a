package sfu

import (
	"net/netip"
	"strings"
)

// Remote candidates. A client names the addresses the unit sends its connectivity checks and
// media to; one naming a loopback, private or link-local address (or a name to resolve) would
// make the unit send UDP into its own host or network. Such candidates are dropped, from
// trickled candidates and from answers alike, unless Config.AllowPrivateCandidates (a LAN
// deployment, tests on loopback).

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// remoteAddrAllowed reports whether the unit may send to a remote candidate at addr.
func remoteAddrAllowed(addr string, allowPrivate bool) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		return false // a name (mDNS or DNS) or a scoped address
	}
	ip = ip.Unmap()
	if ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	if allowPrivate {
		return true
	}
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip)
}

// candidateAddr is the connection address of an ICE candidate line ("candidate:..." with or
// without "a="); false when the line is not one.
func candidateAddr(line string) (string, bool) {
	line = strings.TrimPrefix(strings.TrimSpace(line), "a=")
	rest, ok := strings.CutPrefix(line, "candidate:")
	if !ok {
		return "", false
	}
	// foundation component transport priority address port typ ...
	f := strings.Fields(rest)
	if len(f) < 6 {
		return "", false
	}
	return f[4], true
}

// candidateAllowed reports whether the unit may use a remote candidate line.
func (s *SFU) candidateAllowed(line string) bool {
	addr, ok := candidateAddr(line)
	if ok && s.allowAddr != nil {
		return s.allowAddr(addr)
	}
	return ok && remoteAddrAllowed(addr, s.cfg.AllowPrivateCandidates)
}

// filterSDP drops the candidate lines of a remote description that the unit may not use.
func (s *SFU) filterSDP(sdp string) string {
	if !strings.Contains(sdp, "a=candidate:") {
		return sdp
	}
	lines := strings.SplitAfter(sdp, "\n")
	out := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(l, "a=candidate:") && !s.candidateAllowed(l) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
