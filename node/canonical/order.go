package canonical

import (
	"unicode/utf16"
	"unicode/utf8"
)

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units, as
// RFC 8785 §3.2.3 sorts object members. Byte order agrees with it except when
// a character in U+E000..U+FFFF meets one above U+FFFF (a surrogate pair sorts
// before it in UTF-16), so runes are compared through their UTF-16 units.
func compareUTF16(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return compareRuneUnits(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// compareRuneUnits compares two distinct runes by their UTF-16 encodings.
func compareRuneUnits(ra, rb rune) int {
	ha, la := units(ra)
	hb, lb := units(rb)
	if ha != hb {
		return int(ha) - int(hb)
	}
	return int(la) - int(lb)
}

// units returns a rune's first UTF-16 code unit and, for a supplementary
// character, its second (zero otherwise).
func units(r rune) (first, second rune) {
	if r < 0x10000 {
		return r, 0
	}
	return utf16.EncodeRune(r)
}

// isJSONNumber reports whether s matches the RFC 8259 number grammar:
// -? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
