package fsm

import "strings"

// Fold returns the canonical form of a nick or channel name under the ascii casemapping advertised in
// ISUPPORT (CASEMAPPING=ascii): A–Z become a–z, nothing else changes.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// MatchMask reports whether a ban or exception mask matches a user. A mask that starts with "did:"
// matches the authenticated DID exactly; any other mask is a case-insensitive glob (with * and ?)
// over nick!user@host.
func MatchMask(mask, hostmask, did string) bool {
	if strings.HasPrefix(mask, "did:") {
		return did != "" && mask == did
	}
	return glob(Fold(mask), Fold(hostmask))
}

// glob matches s against a pattern with * (any run) and ? (any one byte), iteratively with
// backtracking to the last star, so a hostile pattern cannot make it exponential.
func glob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
