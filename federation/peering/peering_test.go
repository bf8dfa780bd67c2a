package peering

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
)

func TestParsePeerAndLink(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want Peer
	}{
		{"did:web:other.example=https://other.example/", true, Peer{DID: "did:web:other.example", BaseURL: "https://other.example", Trust: TrustRelay}},
		{"did:web:other.example=http://127.0.0.1:8080", true, Peer{DID: "did:web:other.example", BaseURL: "http://127.0.0.1:8080", Trust: TrustRelay}},
		{"did:web:other.example", false, Peer{}},
		{"did:key:z6Mk=https://x", false, Peer{}},
		{"did:web:other.example=ftp://x", false, Peer{}},
		{"did:web:other.example=https://x?q=1", false, Peer{}},
	}
	for _, tt := range tests {
		got, err := ParsePeer(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePeer(%q) = %+v, %v", tt.in, got, err)
		}
	}
	links := []struct {
		in   string
		ok   bool
		want Link
	}{
		{"#Chan=did:web:a.example", true, Link{Channel: "#chan", Peer: "did:web:a.example"}},
		{"chan=did:web:a.example", false, Link{}},
		{"#a b=did:web:a.example", false, Link{}},
		{"#chan=https://a.example", false, Link{}},
	}
	for _, tt := range links {
		got, err := ParseLink(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseLink(%q) = %+v, %v", tt.in, got, err)
		}
	}
	peers := []Peer{{DID: "did:web:a.example"}}
	if err := ApplyTrust(peers, map[string]Trust{"did:web:a.example": TrustFull}); err != nil || peers[0].Trust != TrustFull {
		t.Errorf("ApplyTrust = %v, %+v", err, peers)
	}
	if err := ApplyTrust(peers, map[string]Trust{"did:web:b.example": TrustFull}); err == nil {
		t.Error("trust for an unknown peer accepted")
	}
	if _, _, err := ParsePeerTrust("did:web:a.example=owner"); err == nil {
		t.Error("unknown trust level accepted")
	}
}

func TestHomeIsTheLowestDIDOnBothSides(t *testing.T) {
	a, b := "did:web:alpha.example", "did:web:beta.example"
	if Home(a, b) != a || Home(b, a) != a {
		t.Fatalf("Home = %s / %s", Home(a, b), Home(b, a))
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\r\nb\x00c", 10, "abc"},
		{"héllo", 2, "h"}, // never cuts a rune
		{"\xff", 10, "\uFFFD"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in, tt.max); got != tt.want {
			t.Errorf("sanitize(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
	if got := sanitizeName("ev il,\x07x"); got != "evilx" {
		t.Errorf("sanitizeName = %q", got)
	}
	if got := originName("did:web:" + strings.Repeat("a", 100)); len(got) != maxOrigin {
		t.Errorf("origin name length %d", len(got))
	}
	tags := sanitizeTags(map[string]string{"+ok": "v\r\n", "noplus": "x", TagOrigin: "forged", "+bad key": "x"})
	if len(tags) != 1 || tags["+ok"] != "v" {
		t.Errorf("sanitizeTags = %v", tags)
	}
}

func TestSealAndParseEnvelope(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	b := Batch{From: "did:web:a.example", To: "did:web:b.example", Seq: 7, SentAt: 1700000000,
		Topics: []Topic{{Channel: "#c", Text: "hi", SetBy: "a!u@h", AtMS: 1700000000000}}}
	body, err := Seal(priv, b)
	if err != nil {
		t.Fatal(err)
	}
	env, payload, tag, err := ParseEnvelope(body)
	if err != nil || env.Signer != b.From || !ed25519.Verify(pub, batchSigningInput(payload), tag.Signature) {
		t.Fatalf("ParseEnvelope = %+v, %v", env, err)
	}
	got, err := DecodeBatch(payload)
	if err != nil || got.Seq != 7 || len(got.Topics) != 1 || got.Topics[0].Text != "hi" {
		t.Fatalf("DecodeBatch = %+v, %v", got, err)
	}
	bad := []string{
		``, `{}`, `{"signer":"x","payload":"!!","signature":"ed25519:a:b"}`,
		`{"signer":"x","payload":"e30","signature":"nope"}`,
		`{"signer":"x","payload":"e30","signature":"ed25519:a:b","extra":1}`,
	}
	for _, in := range bad {
		if _, _, _, err := ParseEnvelope([]byte(in)); err == nil {
			t.Errorf("ParseEnvelope(%s) accepted", in)
		}
	}
	// Messages, deletes and reactions travel on the stream only: an envelope naming them is
	// malformed, even empty.
	for _, in := range []string{`{}`, `{"seq":1}`, `{"seq":1,"sent_at":1,"what":1}`, `{"seq":1,"sent_at":1,"events":[]}`,
		`{"seq":1,"sent_at":1,"deletions":[{"seq":1}]}`, `{"seq":1,"sent_at":1,"reactions":[{"event_id":"x"}]}`} {
		if _, err := DecodeBatch([]byte(in)); err == nil {
			t.Errorf("DecodeBatch(%s) accepted", in)
		}
	}
	many := Batch{Seq: 1, SentAt: 1, Topics: make([]Topic, MaxBatchItems+1)}
	body, _ = Seal(priv, many)
	_, payload, _, _ = ParseEnvelope(body)
	if _, err := DecodeBatch(payload); err == nil {
		t.Error("an oversized batch was accepted")
	}
}

func FuzzParseEnvelope(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	seed, _ := Seal(priv, Batch{From: "did:web:a.example", To: "did:web:b.example", Seq: 1, SentAt: 1,
		Topics: []Topic{{Channel: "#c", Text: "t", SetBy: "a!u@h", AtMS: 1, RequestID: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}}})
	f.Add(seed)
	rich, _ := Seal(priv, Batch{From: "did:web:a.example", To: "did:web:b.example", Seq: 2, SentAt: 1, WantPresence: true,
		Changes:  []Change{{Kind: ChangeMode, Channel: "#c", Modes: []ModeChange{{Add: true, Mode: "b", Arg: "*!*@x"}}, RequestID: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}},
		Presence: []Presence{{Kind: PresenceMembers, Channel: "#c", Members: []PresenceMember{{Nick: "n"}}}}})
	f.Add(rich)
	f.Add([]byte(`{"signer":"did:web:x","payload":"` + base64.RawURLEncoding.EncodeToString([]byte(`{"seq":1,"sent_at":1}`)) + `","signature":"ed25519:AAAAAAAAAAAAAAAAAAAAAA:AA"}`))
	f.Add([]byte(`{"signer":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, payload, _, err := ParseEnvelope(data)
		if err != nil {
			return
		}
		if env.Signer == "" || payload == nil {
			t.Fatalf("accepted an envelope without signer or payload: %q", data)
		}
		if b, err := DecodeBatch(payload); err == nil && (b.Seq <= 0 || b.Items() > MaxBatchItems) {
			t.Fatalf("accepted batch %+v", b)
		}
	})
}
