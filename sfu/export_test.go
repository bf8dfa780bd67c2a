package sfu

// SetCandidateFilter replaces the address policy of remote candidates: tests run on loopback
// only, so they tell one loopback address from another.
func (s *SFU) SetCandidateFilter(allow func(addr string) bool) { s.allowAddr = allow }

// RemoteAddrAllowed is remoteAddrAllowed.
var RemoteAddrAllowed = remoteAddrAllowed

// HandleUnchecked is Handle without its first look at whether the participant is closing: tests
// use it to reach the moment after that look, when the participant is closed by another
// goroutine while its signal is applied.
func (p *Participant) HandleUnchecked(sig Signal) error {
	switch sig.Type {
	case SignalAnswer:
		return p.answer(sig.SDP)
	case SignalCandidate:
		return p.remoteCandidate(*sig.Candidate)
	}
	return p.Handle(sig)
}
