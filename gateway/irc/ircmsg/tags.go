package ircmsg

import "strings"

// EscapeTagValue escapes a tag value for the wire per IRCv3 message-tags:
// ';' → "\:", space → "\s", '\' → "\\", CR → "\r", LF → "\n".
func EscapeTagValue(v string) string {
	if !strings.ContainsAny(v, "; \\\r\n") {
		return v
	}
	return string(appendEscapedTagValue(make([]byte, 0, len(v)+8), v))
}

func appendEscapedTagValue(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ';':
			dst = append(dst, '\\', ':')
		case ' ':
			dst = append(dst, '\\', 's')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\n':
			dst = append(dst, '\\', 'n')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// UnescapeTagValue reverses EscapeTagValue. A trailing lone backslash is
// dropped and an unknown escape "\x" becomes "x".
func UnescapeTagValue(v string) string {
	first := strings.IndexByte(v, '\\')
	if first < 0 {
		return v
	}
	out := make([]byte, 0, len(v))
	out = append(out, v[:first]...)
	for i := first; i < len(v); i++ {
		c := v[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(v) {
			break
		}
		switch e := v[i]; e {
		case ':':
			out = append(out, ';')
		case 's':
			out = append(out, ' ')
		case 'r':
			out = append(out, '\r')
		case 'n':
			out = append(out, '\n')
		default:
			out = append(out, e)
		}
	}
	return string(out)
}
