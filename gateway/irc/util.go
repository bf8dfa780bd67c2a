package irc

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// cloak renders the visible host of a user, shaped like a host name (clients parse it as one):
// guest.palaver, or <first 8 chars of the method-specific id>.<method>.palaver.
func cloak(did string) string {
	if did == "" {
		return "guest.palaver"
	}
	rest := strings.TrimPrefix(did, "did:")
	method, id, ok := strings.Cut(rest, ":")
	if !ok {
		return "did.palaver"
	}
	id = strings.NewReplacer(":", "-", "%", "-", ".", "-").Replace(id)
	if len(id) > 8 {
		id = id[:8]
	}
	return id + "." + method + ".palaver"
}

// validNick applies the nick rules: 1–64 bytes of valid UTF-8, no spaces, controls or the
// characters IRC uses as separators and wildcards, not starting like a channel, a prefix or a DID.
func validNick(n string) bool {
	if n == "" || len(n) > 64 || !utf8.ValidString(n) {
		return false
	}
	if strings.ContainsAny(n[:1], "#&:+%@~$") || strings.HasPrefix(n, "did:") {
		return false
	}
	for _, r := range n {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(",*?!@", r) {
			return false
		}
	}
	return true
}

// validChannel checks a channel name's syntax (length is checked separately for 479).
func validChannel(name string) bool {
	if len(name) < 2 || (name[0] != '#' && name[0] != '&') || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == ',' || r == 0x7f {
			return false
		}
	}
	return true
}

func sanitizeUser(u string) string {
	var b strings.Builder
	for _, r := range u {
		if r > ' ' && r != '@' && r != '!' && r != ':' && r != 0x7f && b.Len() < 16 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "user"
	}
	return b.String()
}

// serverTime formats a server-time tag value with millisecond precision.
func serverTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func sortSlice[T any](rows []T, less func(a, b T) bool) {
	sort.Slice(rows, func(i, j int) bool { return less(rows[i], rows[j]) })
}

func serverTimeMS(ms int64) string {
	if ms == 0 {
		return ""
	}
	return serverTime(time.UnixMilli(ms))
}
