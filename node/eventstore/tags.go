package eventstore

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Tags are stored as a JSON object of strings (the empty string when there are none), as freeq's
// tags_json column is. They are written with encoding/json. Reading them back with encoding/json
// costs about 2 µs per row, which was 40% of a 50-message history page, so decodeTags first tries
// parseFlatObject, a parser for the common case (no escapes), and falls back to encoding/json for
// anything else. FuzzDecodeTags checks that both always agree.

func encodeTags(tags map[string]string) (string, error) {
	if len(tags) == 0 {
		return "", nil
	}
	b, err := json.Marshal(tags)
	if err != nil {
		return "", fmt.Errorf("encode tags: %w", err)
	}
	return string(b), nil
}

func decodeTags(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	if tags, ok := parseFlatObject(s); ok {
		return tags, nil
	}
	var tags map[string]string
	if err := json.Unmarshal([]byte(s), &tags); err != nil {
		return nil, fmt.Errorf("decode tags: %w", err)
	}
	return tags, nil
}

// parseFlatObject parses a JSON object whose keys and values are strings without escapes. ok is
// false for anything else, valid JSON or not; the caller then uses encoding/json.
func parseFlatObject(s string) (tags map[string]string, ok bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	tags = make(map[string]string, 4)
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return tags, skipSpace(s, i+1) == len(s)
	}
	for {
		var key, value string
		if key, i, ok = plainString(s, i); !ok {
			return nil, false
		}
		if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
			return nil, false
		}
		if value, i, ok = plainString(s, skipSpace(s, i+1)); !ok {
			return nil, false
		}
		tags[key] = value
		switch i = skipSpace(s, i); {
		case i < len(s) && s[i] == ',':
			i = skipSpace(s, i+1)
		case i < len(s) && s[i] == '}':
			return tags, skipSpace(s, i+1) == len(s)
		default:
			return nil, false
		}
	}
}

// plainString reads a JSON string starting at s[i] that has no escapes, no control characters and
// only valid UTF-8, and returns it with the index after its closing quote.
func plainString(s string, i int) (str string, next int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			str = s[i+1 : j]
			return str, j + 1, utf8.ValidString(str)
		case c == '\\' || c < 0x20:
			return "", j, false
		}
	}
	return "", len(s), false
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
