package keyresolver

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

func TestValidEd25519Point(t *testing.T) {
	for i := 0; i < 50; i++ {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !ValidEd25519Point(pub) {
			t.Fatalf("generated key %x rejected", pub)
		}
	}
	notOnCurve := 0
	for i := 0; i < 200; i++ {
		b := make([]byte, 32)
		rand.Read(b)
		if !ValidEd25519Point(b) {
			notOnCurve++
		}
	}
	if notOnCurve == 0 {
		t.Fatal("200 random strings all accepted: about half are not points")
	}
	cases := []struct {
		name string
		key  []byte
		want bool
	}{
		{"too short", make([]byte, 31), false},
		{"y = p (non-canonical)", append([]byte{0xed}, append(repeat(0xff, 30), 0x7f)...), false},
		{"identity (y = 1)", append([]byte{1}, make([]byte, 31)...), true},
		{"y = 1 with the sign bit (x = 0 negative)", append([]byte{1}, append(make([]byte, 30), 0x80)...), false},
	}
	for _, tc := range cases {
		if got := ValidEd25519Point(tc.key); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
