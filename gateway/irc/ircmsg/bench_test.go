package ircmsg

import "testing"

// benchLine is a ~100-byte PRIVMSG carrying the tags the server adds.
const benchLine = "@time=2024-05-01T12:00:00.000Z;msgid=01HXZ3K9Q8W2;account=did:key:z6Mk :alice!a@h PRIVMSG #chan :hello there"

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchLine)))
	for b.Loop() {
		if _, err := Parse(benchLine); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendTo(b *testing.B) {
	m, err := Parse(benchLine)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, MaxLineBytes)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchLine) + 2))
	for b.Loop() {
		buf = m.AppendTo(buf[:0])
	}
}
