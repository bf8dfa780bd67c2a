package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkedReader hands out its data at most size bytes per Read, to split
// lines across reads.
type chunkedReader struct {
	data []byte
	size int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.size, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// readResult is one ReadLine outcome: a line, or one of the errors.
type readResult struct {
	line string
	err  error
}

func readAll(t *testing.T, lr *lineReader) []readResult {
	t.Helper()
	var out []readResult
	for range 100000 {
		line, err := lr.readLine()
		switch {
		case err == nil:
			out = append(out, readResult{line: string(line)})
		case errors.Is(err, ErrLineTooLong):
			out = append(out, readResult{err: ErrLineTooLong})
		case errors.Is(err, ErrInputFlood):
			return append(out, readResult{err: ErrInputFlood})
		case errors.Is(err, io.EOF):
			return append(out, readResult{err: io.EOF})
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	t.Fatal("reader did not finish")
	return nil
}

func TestLineReader(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name  string
		input string
		want  []readResult
	}{
		{"crlf", "NICK a\r\nUSER b\r\n", []readResult{{line: "NICK a"}, {line: "USER b"}, {err: io.EOF}}},
		{"bare lf", "NICK a\nUSER b\n", []readResult{{line: "NICK a"}, {line: "USER b"}, {err: io.EOF}}},
		{"empty lines", "\r\n\n\r\nX\n", []readResult{{line: ""}, {line: ""}, {line: ""}, {line: "X"}, {err: io.EOF}}},
		{"only one trailing cr removed", "A\r\r\n", []readResult{{line: "A\r"}, {err: io.EOF}}},
		{"inner cr kept", "A\rB\r\n", []readResult{{line: "A\rB"}, {err: io.EOF}}},
		{"partial line at eof dropped", "A\r\nQUIT", []readResult{{line: "A"}, {err: io.EOF}}},
		{"empty input", "", []readResult{{err: io.EOF}}},
		{"8192 with crlf accepted", long(8190) + "\r\nNEXT\r\n", []readResult{{line: long(8190)}, {line: "NEXT"}, {err: io.EOF}}},
		{"8192 with lf accepted", long(8191) + "\nNEXT\n", []readResult{{line: long(8191)}, {line: "NEXT"}, {err: io.EOF}}},
		{"8193 with crlf refused", long(8191) + "\r\nNEXT\r\n", []readResult{{err: ErrLineTooLong}, {line: "NEXT"}, {err: io.EOF}}},
		{"8193 with lf refused", long(8192) + "\nNEXT\n", []readResult{{err: ErrLineTooLong}, {line: "NEXT"}, {err: io.EOF}}},
		{"long line drained then next", long(100000) + "\r\nA\r\nB\r\n", []readResult{{err: ErrLineTooLong}, {line: "A"}, {line: "B"}, {err: io.EOF}}},
		{"two long lines", long(9000) + "\n" + long(20000) + "\nC\n", []readResult{{err: ErrLineTooLong}, {err: ErrLineTooLong}, {line: "C"}, {err: io.EOF}}},
		{"long partial line at eof", long(50000), []readResult{{err: io.EOF}}},
		{"flood over 1 MiB", long(maxDrainBytes+2*MaxLineBytes) + "\nA\n", []readResult{{err: ErrInputFlood}}},
		{"just under drain cap", long(maxDrainBytes-1) + "\nA\n", []readResult{{err: ErrLineTooLong}, {line: "A"}, {err: io.EOF}}},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 7, 4096, 1 << 20} {
			if chunk == 1 && len(tt.input) > 20000 {
				continue // byte-at-a-time over megabytes only slows the run
			}
			lr := newLineReader(&chunkedReader{data: []byte(tt.input), size: chunk}, MaxLineBytes, maxDrainBytes)
			got := readAll(t, lr)
			if !equalResults(got, tt.want) {
				t.Errorf("%s (chunk %d): got %s, want %s", tt.name, chunk, describe(got), describe(tt.want))
			}
		}
	}
}

func equalResults(a, b []readResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].line != b[i].line || !errors.Is(a[i].err, b[i].err) || (a[i].err == nil) != (b[i].err == nil) {
			return false
		}
	}
	return true
}

func describe(rs []readResult) string {
	var b strings.Builder
	for _, r := range rs {
		if r.err != nil {
			b.WriteString("[" + r.err.Error() + "]")
			continue
		}
		line := r.line
		if len(line) > 20 {
			line = line[:20] + "..."
		}
		b.WriteString("[" + line + "]")
	}
	return b.String()
}

// modelLines is the reference the fuzz target checks the reader against:
// the same rules written as plain index arithmetic over the whole input.
// A line whose terminator lies at offset p from the line start is accepted
// when p < maxLine, refused when its LF comes before the drain cap (read in
// whole buffers of maxLine bytes), and otherwise floods.
func modelLines(input []byte, maxLine, maxDrain int) []readResult {
	var out []readResult
	for {
		p := bytes.IndexByte(input, '\n')
		if p < 0 {
			if len(input) >= maxLine && (len(input)/maxLine)*maxLine > maxDrain {
				return append(out, readResult{err: ErrInputFlood})
			}
			return append(out, readResult{err: io.EOF})
		}
		switch {
		case p < maxLine:
			out = append(out, readResult{line: string(trimLineEnd(input[:p+1]))})
		case (p/maxLine)*maxLine > maxDrain:
			return append(out, readResult{err: ErrInputFlood})
		default:
			out = append(out, readResult{err: ErrLineTooLong})
		}
		input = input[p+1:]
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("NICK a\r\nUSER b 0 * :c\r\n"), uint8(3))
	f.Add([]byte("a\nb\r\n\r\n\n"), uint8(1))
	f.Add([]byte(strings.Repeat("x", 40)+"\r\nok\r\n"), uint8(5))
	f.Add([]byte(strings.Repeat("y", 300)+"\nz\n"), uint8(64))
	f.Add([]byte(strings.Repeat("w", 150)), uint8(16))
	const maxLine, maxDrain = 32, 128
	f.Fuzz(func(t *testing.T, input []byte, chunk uint8) {
		lr := newLineReader(&chunkedReader{data: input, size: int(chunk%64) + 1}, maxLine, maxDrain)
		var got []readResult
		for {
			line, err := lr.readLine()
			if err == nil {
				if len(line) >= maxLine || bytes.IndexByte(line, '\n') >= 0 {
					t.Fatalf("line of %d bytes or with LF: %q", len(line), line)
				}
				got = append(got, readResult{line: string(line)})
				continue
			}
			if errors.Is(err, ErrLineTooLong) {
				got = append(got, readResult{err: ErrLineTooLong})
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, ErrInputFlood) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(err, io.EOF) {
				err = io.EOF
			} else {
				err = ErrInputFlood
			}
			got = append(got, readResult{err: err})
			break
		}
		if want := modelLines(input, maxLine, maxDrain); !equalResults(got, want) {
			t.Fatalf("got %s, want %s", describe(got), describe(want))
		}
	})
}

// freshSource is a freshReader over fixed chunks that counts the buffers it hands out and gets back.
type freshSource struct {
	chunks         []string
	lent, released int
}

func (f *freshSource) Read(p []byte) (int, error) {
	if len(f.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.chunks[0])
	f.chunks = f.chunks[1:]
	return n, nil
}

func (f *freshSource) readFresh() ([]byte, int, error) {
	buf := make([]byte, initialLineBuffer)
	n, err := f.Read(buf)
	if n == 0 {
		return nil, 0, err
	}
	f.lent++
	return buf, n, nil
}

func (f *freshSource) release(buf []byte) {
	if buf != nil {
		f.released++
	}
}

// TestLineReaderReleasesIdleBuffer: with a fresh source, the buffer goes back once every byte is
// used, and not while part of a line is pending.
func TestLineReaderReleasesIdleBuffer(t *testing.T) {
	src := &freshSource{chunks: []string{"PING a\r\nPI", "NG b\r\n"}}
	lr := newLineReader(src, MaxLineBytes, maxDrainBytes)
	tests := []struct {
		wantLine string
		wantHeld bool
	}{
		{"PING a", true}, // "PI" is still unread
		{"PING b", false},
	}
	for i, tt := range tests {
		line, err := lr.readLine()
		if err != nil || string(line) != tt.wantLine {
			t.Fatalf("line %d: %q, %v", i, line, err)
		}
		lr.releaseIdle()
		if held := lr.buf != nil; held != tt.wantHeld {
			t.Fatalf("after line %d: buffer held = %v, want %v", i, held, tt.wantHeld)
		}
	}
	if src.released != src.lent {
		t.Fatalf("%d buffers lent, %d released", src.lent, src.released)
	}
}
