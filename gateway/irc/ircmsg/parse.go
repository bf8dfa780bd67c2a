package ircmsg

import (
	"fmt"
	"strings"
)

// Parse parses one IRC line. The line should come without its CRLF, but a
// trailing "\r\n", "\n" or "\r" is tolerated, as are leading spaces and runs
// of spaces between fields. NUL, CR and LF anywhere else are rejected. At
// most 15 parameters are produced: the 15th takes the rest of the line.
//
// The returned strings share memory with line.
func Parse(line string) (Message, error) {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	if i := strings.IndexAny(line, "\x00\r\n"); i >= 0 {
		return Message{}, fmt.Errorf("%w: forbidden control byte %q at offset %d", ErrMalformed, line[i], i)
	}
	rest := trimLeadingSpaces(line)
	if rest == "" {
		return Message{}, ErrEmpty
	}

	var m Message
	if rest[0] == '@' {
		var tagSection string
		tagSection, rest = cutToken(rest[1:])
		m.Tags = parseTags(tagSection)
		rest = trimLeadingSpaces(rest)
		if rest == "" {
			return Message{}, fmt.Errorf("%w: tags without a command", ErrMalformed)
		}
	}

	if rest[0] == ':' {
		m.Source, rest = cutToken(rest[1:])
		if m.Source == "" {
			return Message{}, fmt.Errorf("%w: empty source", ErrMalformed)
		}
		rest = trimLeadingSpaces(rest)
		if rest == "" {
			return Message{}, fmt.Errorf("%w: source without a command", ErrMalformed)
		}
	}

	var command string
	command, rest = cutToken(rest)
	if command[0] == ':' || command[0] == '@' {
		// Such a command could not be serialized back unambiguously.
		return Message{}, fmt.Errorf("%w: command %q starts with %q", ErrMalformed, command, command[0])
	}
	m.Command = upperASCII(command)

	m.Params = parseParams(rest)
	return m, nil
}

// parseParams splits the text after the command into parameters.
func parseParams(rest string) []string {
	rest = trimLeadingSpaces(rest)
	if rest == "" {
		return nil
	}
	params := make([]string, 0, estimateParams(rest))
	for rest != "" {
		if rest[0] == ':' {
			return append(params, rest[1:])
		}
		if len(params) == maxParams-1 {
			return append(params, rest)
		}
		var p string
		p, rest = cutToken(rest)
		params = append(params, p)
		rest = trimLeadingSpaces(rest)
	}
	return params
}

// estimateParams returns an upper bound on the parameter count of rest
// (which starts with a non-space byte), so params is allocated once.
func estimateParams(rest string) int {
	middle := rest
	if i := strings.Index(rest, " :"); i >= 0 {
		middle = rest[:i]
	}
	n := strings.Count(middle, " ") + 2
	if n > maxParams {
		n = maxParams
	}
	return n
}

// parseTags parses the tag section (without '@'). Empty entries are skipped
// and a repeated key keeps its last value, as IRCv3 message-tags says.
func parseTags(section string) map[string]string {
	if section == "" {
		return nil
	}
	var tags map[string]string
	for section != "" {
		var entry string
		if i := strings.IndexByte(section, ';'); i >= 0 {
			entry, section = section[:i], section[i+1:]
		} else {
			entry, section = section, ""
		}
		key, value, _ := strings.Cut(entry, "=")
		if key == "" {
			continue
		}
		if tags == nil {
			tags = make(map[string]string, strings.Count(section, ";")+1)
		}
		tags[key] = UnescapeTagValue(value)
	}
	return tags
}

// cutToken splits s at its first space.
func cutToken(s string) (token, rest string) {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func trimLeadingSpaces(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	return s
}

// upperASCII upper-cases ASCII letters, allocating only when s has a
// lower-case letter.
func upperASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'a' <= c && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
