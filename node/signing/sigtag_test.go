package signing

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

func TestKID(t *testing.T) {
	_, pub := testKey(1)
	if got, want := KID(pub), "NHUPmL1Z_PyUbaRaqr6TOw"; got != want {
		t.Fatalf("KID = %s, want %s", got, want)
	}
	if len(KID(pub)) != 22 {
		t.Fatal("KID is not 22 characters")
	}
}

func TestParsePublicKey(t *testing.T) {
	_, pub := testKey(1)
	encoded := EncodePublicKey(pub)
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"nopad", encoded, false},
		{"padded", encoded + "=", false},
		{"standard alphabet", strings.NewReplacer("-", "+", "_", "/").Replace("gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q"), true},
		{"short", encoded[:40], true},
		{"long", encoded + "AAAA", true},
		{"empty", "", true},
		{"line break", encoded[:20] + "\n" + encoded[20:], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePublicKey(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParsePublicKey(%q) succeeded", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePublicKey: %v", err)
			}
			if !got.Equal(pub) {
				t.Fatal("wrong key")
			}
		})
	}
}

func TestParseSigTag(t *testing.T) {
	priv, pub := testKey(1)
	kid := KID(pub)
	sig := ed25519.Sign(priv, []byte("doc"))
	sigText := b64.EncodeToString(sig)
	good := "ed25519:" + kid + ":" + sigText
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"valid", good, nil},
		{"legacy bare base64", "/82Len7Z3lcnJsRKEZ9f+YPfR4UqC0KhkxW01m9LTeqX==", ErrLegacyFormat},
		{"empty", "", ErrLegacyFormat},
		{"unknown algorithm", "ml-dsa-87:" + kid + ":" + sigText, ErrUnknownAlgorithm},
		{"algorithm is case-sensitive", "Ed25519:" + kid + ":" + sigText, ErrUnknownAlgorithm},
		{"empty algorithm", ":" + kid + ":" + sigText, ErrMalformedTag},
		{"no signature part", "ed25519:" + kid, ErrMalformedTag},
		{"short kid", "ed25519:" + kid[:21] + ":" + sigText, ErrMalformedTag},
		{"kid not base64url", "ed25519:" + strings.Repeat("!", 22) + ":" + sigText, ErrMalformedTag},
		{"padded signature", good + "==", ErrMalformedTag},
		{"standard-alphabet signature", "ed25519:" + kid + ":" + strings.Repeat("+", 86), ErrMalformedTag},
		{"short signature", "ed25519:" + kid + ":" + sigText[:80], ErrMalformedTag},
		{"long signature", "ed25519:" + kid + ":" + b64.EncodeToString(append(sig, 0)), ErrMalformedTag},
		{"line break in signature", "ed25519:" + kid + ":" + sigText[:40] + "\n" + sigText[40:], ErrMalformedTag},
		{"third colon", good + ":x", ErrMalformedTag},
		{"non-canonical trailing bits", "ed25519:" + kid + ":" + sigText[:85] + flipLastBits(sigText[85]), ErrMalformedTag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSigTag(tt.in)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("ParseSigTag(%q) error %v, want %v", tt.in, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSigTag: %v", err)
			}
			if got.Algorithm != AlgorithmEd25519 || got.KID != kid || string(got.Signature) != string(sig) {
				t.Fatalf("ParseSigTag = %+v", got)
			}
			if got.String() != tt.in || FormatSigTag(got.KID, got.Signature) != tt.in {
				t.Fatal("ParseSigTag does not round-trip")
			}
		})
	}
}

// flipLastBits returns the base64url character that decodes to the same
// leading 4 bits as c but with its low 2 bits (padding bits for a 64-byte
// value) set differently.
func flipLastBits(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return string(alphabet[i^1])
}

func TestVerify(t *testing.T) {
	priv, pub := testKey(1)
	_, otherPub := testKey(2)
	doc := []byte(`{"body":"sha256:00","from":"did:plc:a","msgid":"01","target":"#x"}`)
	tag := Sign(priv, doc)
	keys := Keys{}
	keys.Add(pub)
	_, sigText, _ := strings.Cut(strings.TrimPrefix(tag, "ed25519:"), ":")
	tests := []struct {
		name    string
		doc     []byte
		tag     string
		lookup  KeyLookup
		verdict Verdict
		reason  Reason
	}{
		{"valid", doc, tag, keys.Lookup, Valid, ReasonValid},
		{"tampered bytes", append([]byte(nil), append(doc, ' ')...), tag, keys.Lookup, Invalid, ReasonSignatureMismatch},
		{"unsigned", doc, "", keys.Lookup, Unverifiable, ReasonUnsigned},
		{"legacy", doc, sigText, keys.Lookup, Unverifiable, ReasonLegacyFormat},
		{"unknown algorithm", doc, "rsa4096" + strings.TrimPrefix(tag, "ed25519"), keys.Lookup, Unverifiable, ReasonUnknownAlgorithm},
		{"bad base64", doc, "ed25519:" + KID(pub) + ":***", keys.Lookup, Unverifiable, ReasonUnusableSignature},
		{"unknown kid", doc, FormatSigTag(KID(otherPub), []byte(strings.Repeat("x", 64))), keys.Lookup, Unverifiable, ReasonUnknownKey},
		{"nil lookup", doc, tag, nil, Unverifiable, ReasonUnknownKey},
		{"key does not hash to kid", doc, tag, func(string) (ed25519.PublicKey, bool) { return otherPub, true }, Unverifiable, ReasonKIDMismatch},
		{"short key", doc, tag, func(string) (ed25519.PublicKey, bool) { return pub[:31], true }, Unverifiable, ReasonUnusableKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdict, reason := Verify(tt.doc, tt.tag, tt.lookup)
			if verdict != tt.verdict || reason != tt.reason {
				t.Fatalf("Verify = %v (%s), want %v (%s)", verdict, reason, tt.verdict, tt.reason)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := map[Verdict]string{Valid: "valid", Invalid: "invalid", Unverifiable: "unverifiable", Verdict(9): "unknown"}
	for v, want := range tests {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), want)
		}
	}
	// Persisted: the values must not move.
	if Valid != 0 || Invalid != 1 || Unverifiable != 2 {
		t.Fatal("verdict values were reordered")
	}
}

func TestVerifyDocumentReasons(t *testing.T) {
	priv, pub := testKey(1)
	keys := Keys{}
	keys.Add(pub)
	tag := Sign(priv, []byte("anything"))
	venue := mustChannel(t, "#x")
	tests := []struct {
		name   string
		doc    Document
		tag    string
		reason Reason
	}{
		{"no sender", Message{Envelope: Envelope{MsgID: "01", Venue: venue}}, tag, ReasonUnknownSender},
		{"no venue", Message{Envelope: Envelope{From: "did:plc:a", MsgID: "01"}}, tag, ReasonNoVenue},
		{"no msgid", Message{Envelope: Envelope{From: "did:plc:a", Venue: venue}}, tag, ReasonNoDocument},
		{"act without from", Act{ID: "01", Venue: venue, Tags: map[string]string{TagAct: "handoff"}}, tag, ReasonUnknownSender},
		{"act without venue", Act{ID: "01", Tags: map[string]string{TagFrom: "did:plc:a"}}, tag, ReasonNoVenue},
		{"unsigned", Message{Envelope: Envelope{From: "did:plc:a", MsgID: "01", Venue: venue}}, "", ReasonUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdict, reason := VerifyDocument(tt.doc, tt.tag, keys.Lookup)
			if verdict != Unverifiable || reason != tt.reason {
				t.Fatalf("VerifyDocument = %v (%s), want unverifiable (%s)", verdict, reason, tt.reason)
			}
		})
	}
}
