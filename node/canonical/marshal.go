package canonical

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxSafeInteger is the largest integer an IEEE 754 double holds exactly
// (2^53 - 1). JCS numbers are doubles, so a larger integer would not survive a
// round trip through Transform.
const maxSafeInteger = 1<<53 - 1

// maxDepth bounds the nesting of arrays and objects Marshal will walk, as
// Transform's parser does.
const maxDepth = 10000

// initialBufferSize fits a typical signing document without regrowth.
const initialBufferSize = 512

// ErrUnsupported is returned by Marshal for a value of a type it does not
// encode.
var ErrUnsupported = errors.New("canonical: unsupported value")

// Marshal returns the JCS (RFC 8785) encoding of v. It accepts
// map[string]any, map[string]string, []any, []string, string, bool, nil, the
// integer types and json.Number, nested to any of these. Strings must be
// valid UTF-8 and integers must lie within ±(2^53-1), so that the output is
// always a fixed point of Transform.
func Marshal(v any) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, initialBufferSize)}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Transform returns the JCS canonical form of the JSON text in jsonBytes.
func Transform(jsonBytes []byte) ([]byte, error) {
	if jsonBytes == nil {
		return nil, errors.New("canonical: transform: no JSON data")
	}
	out, err := jcs.Transform(jsonBytes)
	if err != nil {
		return nil, fmt.Errorf("canonical: transform: %w", err)
	}
	return out, nil
}

type encoder struct {
	buf []byte
}

func (e *encoder) value(v any, depth int) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		return e.string(x)
	case json.Number:
		return e.number(x)
	case int:
		return e.int(int64(x))
	case int8:
		return e.int(int64(x))
	case int16:
		return e.int(int64(x))
	case int32:
		return e.int(int64(x))
	case int64:
		return e.int(x)
	case uint:
		return e.uint(uint64(x))
	case uint8:
		return e.uint(uint64(x))
	case uint16:
		return e.uint(uint64(x))
	case uint32:
		return e.uint(uint64(x))
	case uint64:
		return e.uint(x)
	case map[string]any:
		if depth >= maxDepth {
			return errTooDeep
		}
		return writeObject(e, x, func(val any) error { return e.value(val, depth+1) })
	case map[string]string:
		return writeObject(e, x, func(val string) error { return e.string(val) })
	case []any:
		if depth >= maxDepth {
			return errTooDeep
		}
		return writeArray(e, x, func(val any) error { return e.value(val, depth+1) })
	case []string:
		return writeArray(e, x, func(val string) error { return e.string(val) })
	default:
		return fmt.Errorf("%w: %T", ErrUnsupported, v)
	}
	return nil
}

var errTooDeep = fmt.Errorf("canonical: nesting deeper than %d", maxDepth)

func writeObject[V any](e *encoder, m map[string]V, writeValue func(V) error) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUTF16)
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(k); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := writeValue(m[k]); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func writeArray[V any](e *encoder, a []V, writeValue func(V) error) error {
	e.buf = append(e.buf, '[')
	for i, val := range a {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := writeValue(val); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *encoder) int(n int64) error {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return fmt.Errorf("canonical: integer %d is outside ±(2^53-1)", n)
	}
	e.buf = strconv.AppendInt(e.buf, n, 10)
	return nil
}

func (e *encoder) uint(n uint64) error {
	if n > maxSafeInteger {
		return fmt.Errorf("canonical: integer %d is outside ±(2^53-1)", n)
	}
	e.buf = strconv.AppendUint(e.buf, n, 10)
	return nil
}

// number writes a json.Number in ECMAScript form, as Transform would.
func (e *encoder) number(n json.Number) error {
	if !isJSONNumber(string(n)) {
		return fmt.Errorf("canonical: %q is not a JSON number", truncate(string(n)))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return fmt.Errorf("canonical: number %q: %w", truncate(string(n)), err)
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return fmt.Errorf("canonical: number %q: %w", truncate(string(n)), err)
	}
	e.buf = append(e.buf, text...)
	return nil
}

const hexDigits = "0123456789abcdef"

// string writes s quoted, escaping only what RFC 8785 requires.
func (e *encoder) string(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("canonical: string %q is not valid UTF-8", truncate(s))
	}
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		switch c {
		case '"', '\\':
			e.buf = append(e.buf, '\\', c)
		case '\b':
			e.buf = append(e.buf, '\\', 'b')
		case '\f':
			e.buf = append(e.buf, '\\', 'f')
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		default:
			e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
	return nil
}

// truncate keeps error messages short when they quote caller data.
func truncate(s string) string {
	const limit = 32
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
