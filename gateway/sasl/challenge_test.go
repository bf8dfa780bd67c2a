package sasl

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"
)

func TestNewChallenge(t *testing.T) {
	ch, err := NewChallenge("conn-42", baseTime, &countingReader{})
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 32)
	for i := range nonce {
		nonce[i] = byte(i)
	}
	wantNonce := base64.RawURLEncoding.EncodeToString(nonce)
	want := `{"session_id":"conn-42","nonce":"` + wantNonce + `","timestamp":1750000000}`
	if string(ch.JSON) != want {
		t.Fatalf("JSON = %s\nwant   %s", ch.JSON, want)
	}
	if ch.Nonce != wantNonce || ch.SessionID != "conn-42" || ch.Timestamp != baseTime.Unix() {
		t.Fatalf("fields = %+v", ch)
	}
	if ch.Encoded() != base64.RawURLEncoding.EncodeToString([]byte(want)) {
		t.Fatalf("Encoded = %q", ch.Encoded())
	}
	other, err := NewChallenge("conn-42", baseTime, &countingReader{next: 1})
	if err != nil || bytes.Equal(other.JSON, ch.JSON) {
		t.Fatal("different randomness gave the same challenge")
	}
}

func TestChallengeFresh(t *testing.T) {
	ch := Challenge{Timestamp: baseTime.Unix()}
	for offset, want := range map[time.Duration]bool{
		0: true, 60 * time.Second: true, -60 * time.Second: true,
		61 * time.Second: false, -61 * time.Second: false, 60*time.Second + time.Millisecond: false,
	} {
		if got := ch.fresh(baseTime.Add(offset), DefaultChallengeTTL); got != want {
			t.Errorf("fresh at %v = %v, want %v", offset, got, want)
		}
	}
}
