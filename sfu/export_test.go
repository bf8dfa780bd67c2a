package sfu

// SetCandidateFilter replaces the address policy of remote candidates: tests run on loopback
// only, so they tell one loopback address from another.
func (s *SFU) SetCandidateFilter(allow func(addr string) bool) { s.allowAddr = allow }

// RemoteAddrAllowed is remoteAddrAllowed.
var RemoteAddrAllowed = remoteAddrAllowed
