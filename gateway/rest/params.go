package rest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Parsers for the path and query parameters of the read routes. Each
// returns an error whose text is fit for the Error object's message.

// errDirectMessages marks a request for a DM venue, which REST never serves.
var errDirectMessages = errors.New("direct messages are not readable over the REST API")

// parseChannelName turns a channel as written in a path or query ("#chan",
// "chan", "&local", any case, already URL-decoded) into its folded name.
// A name without '#' or '&' gets '#'. The result must be at most 64 bytes
// of valid UTF-8 without spaces, commas or control characters. A DM venue
// ("dm:...") gives errDirectMessages.
func parseChannelName(raw string) (string, error) {
	if strings.HasPrefix(raw, "dm:") {
		return "", errDirectMessages
	}
	name := raw
	if name == "" || (name[0] != '#' && name[0] != '&') {
		name = "#" + name
	}
	switch {
	case len(name) < 2:
		return "", errors.New("the channel name is empty")
	case len(name) > fsm.MaxChannelLen:
		return "", fmt.Errorf("the channel name is longer than %d bytes", fsm.MaxChannelLen)
	case !utf8.ValidString(name):
		return "", errors.New("the channel name is not valid UTF-8")
	case strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == ',' || r == 0x7f }):
		return "", errors.New("the channel name holds a space, a comma or a control character")
	}
	return fsm.Fold(name), nil
}

// parseNick checks a nick from a path: 1 to 64 bytes of valid UTF-8
// without spaces, commas or control characters.
func parseNick(raw string) (string, error) {
	switch {
	case raw == "":
		return "", errors.New("the nick is empty")
	case len(raw) > fsm.MaxNickLen:
		return "", fmt.Errorf("the nick is longer than %d bytes", fsm.MaxNickLen)
	case !utf8.ValidString(raw):
		return "", errors.New("the nick is not valid UTF-8")
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == ',' || r == 0x7f }):
		return "", errors.New("the nick holds a space, a comma or a control character")
	}
	return raw, nil
}

// pageLimits are a route's default and maximum page sizes.
type pageLimits struct {
	def, max int
}

// Page sizes: the contract caps list endpoints at 200; export and evidence
// have their own caps (freeq-reference §2.8, §3.3).
var (
	historyLimits  = pageLimits{def: 50, max: 200}
	searchLimits   = pageLimits{def: 25, max: 200}
	exportLimits   = pageLimits{def: 1000, max: 10000}
	evidenceLimits = pageLimits{def: 1000, max: 5000}
)

// parseLimit reads the limit parameter: absent → the default; a positive
// integer → itself, capped at the maximum (however large it is written);
// anything else (zero, negative, not an integer) is an error.
func parseLimit(raw string, present bool, l pageLimits) (int, error) {
	if !present || raw == "" {
		return l.def, nil
	}
	if !isDecimal(raw) || raw[0] == '-' {
		return 0, fmt.Errorf("limit %q is not a positive integer", raw)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil { // all digits, so only too large
		return l.max, nil
	}
	if n <= 0 {
		return 0, fmt.Errorf("limit %d is not a positive integer", n)
	}
	return int(min(n, int64(l.max))), nil
}

// cursorKind says what a before parameter holds.
type cursorKind int

const (
	cursorNone  cursorKind = iota // absent: start from the newest
	cursorUnix                    // Unix seconds, strict "<"
	cursorMsgID                   // a message id (ULID)
)

// cursor is a parsed before parameter.
type cursor struct {
	kind  cursorKind
	unix  int64  // cursorUnix; math.MaxInt64 stands for any time too large to matter
	msgid string // cursorMsgID, uppercased
}

// parseBefore reads the before parameter: absent or empty → none; a
// non-negative integer → Unix seconds (one too large for int64 is "no
// bound"); a ULID → a msgid. Anything else, negative numbers included, is
// an error.
func parseBefore(raw string) (cursor, error) {
	if raw == "" {
		return cursor{}, nil
	}
	if isULID(raw) {
		return cursor{kind: cursorMsgID, msgid: strings.ToUpper(raw)}, nil
	}
	if !isDecimal(raw) {
		return cursor{}, fmt.Errorf("before %q is neither Unix seconds nor a msgid", raw)
	}
	if raw[0] == '-' {
		return cursor{}, fmt.Errorf("before %s is negative", raw)
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil { // all digits, so only too large
		return cursor{kind: cursorUnix, unix: maxUnix}, nil
	}
	if n < 0 {
		return cursor{}, fmt.Errorf("before %d is negative", n)
	}
	return cursor{kind: cursorUnix, unix: n}, nil
}

// maxUnix is a before bound later than any stored message.
const maxUnix = 1<<63 - 1

// isDecimal reports whether s is an optionally signed run of ASCII digits.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isULID reports whether s is 26 characters of Crockford base32 whose first
// character is at most '7' (a ULID's 48-bit time fits 10 characters), in
// either case.
func isULID(s string) bool {
	if len(s) != 26 || s[0] < '0' || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isCrockford(s[i]) {
			return false
		}
	}
	return true
}

func isCrockford(c byte) bool {
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	switch {
	case c >= '0' && c <= '9':
		return true
	case c >= 'A' && c <= 'Z':
		return c != 'I' && c != 'L' && c != 'O' && c != 'U'
	}
	return false
}

// ParseChannelName checks a channel name from a path or a query (the leading # may be left out)
// and returns it folded; other packages that mount channel routes use it.
func ParseChannelName(raw string) (string, error) { return parseChannelName(raw) }
