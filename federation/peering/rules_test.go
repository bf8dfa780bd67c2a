package peering

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

type fixedState struct{ st *fsm.State }

func (s fixedState) Read(f func(*fsm.State)) { f(s.st) }

// testFederation is a federation of did:web:b.example whose one server key is key, linked with
// did:web:a.example (its home) over #c.
func testFederation(t *testing.T, now *time.Time) (*Federation, ed25519.PrivateKey) {
	t.Helper()
	return testFederationOver(t, now, fsm.NewFixture())
}

// testFederationOver is testFederation over the state fx holds, with the server key added to it.
func testFederationOver(t *testing.T, now *time.Time, fx *fsm.Fixture) (*Federation, ed25519.PrivateKey) {
	t.Helper()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	fx.AddKey("did:web:b.example", fsm.KeyRecord{KID: signing.KID(pub), PublicKey: pub, Source: "server-key"})
	st := fx.State()
	f, err := New(Config{SendEvery: time.Second, CatchUpWindow: 24 * time.Hour, ServerDID: "did:web:b.example", NodeName: "n1", Key: key, Client: http.DefaultClient,
		Peers: []Peer{{DID: "did:web:a.example", BaseURL: "http://a.example", Trust: TrustFull}},
		Links: []Link{{Channel: "#c", Peer: "did:web:a.example"}},
		State: fixedState{st}, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return f, key
}

func TestOwnRequests(t *testing.T) {
	now := time.Now()
	f, key := testFederation(t, &now)
	if !f.HomeElsewhere("#c") || f.HomeElsewhere("#other") {
		t.Fatal("HomeElsewhere")
	}
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	request := func(key ed25519.PrivateKey, made time.Time, text string) Topic {
		tp := Topic{Channel: "#c", Text: text, SetBy: "bob!u@h", SetByDID: "did:plc:bob",
			RequestID: ulid.MustNew(ulid.Timestamp(made), rand.Reader).String()}
		tp.RequestSig = signing.Sign(key, topicRequestDocument("did:web:b.example", tp))
		return tp
	}
	fresh := request(key, now, "asked")
	altered := fresh
	altered.Text = "altered"
	tests := []struct {
		name string
		t    Topic
		want bool
	}{
		{"our fresh request", fresh, true},
		{"answered twice", fresh, false},
		{"altered by the home", altered, false},
		{"signed by another key", request(stranger, now, "x"), false},
		{"too old", request(key, now.Add(-requestTTL-time.Minute), "old"), false},
		{"from the future", request(key, now.Add(time.Hour), "future"), false},
		{"no request", Topic{Channel: "#c", Text: "x", SetByDID: "did:plc:bob"}, false},
	}
	for _, tt := range tests {
		if got := f.ownTopicRequest(tt.t); got != tt.want {
			t.Errorf("%s: ownTopicRequest = %v, want %v", tt.name, got, tt.want)
		}
	}
	c := Change{Kind: ChangeMode, Channel: "#c", Actor: "bob!u@h", ActorDID: "did:plc:bob", Modes: []ModeChange{{Add: true, Mode: "m"}},
		RequestID: ulid.Make().String()}
	c.RequestSig = signing.Sign(key, changeRequestDocument("did:web:b.example", c))
	flipped := c
	flipped.Modes = []ModeChange{{Add: false, Mode: "m"}}
	if f.ownChangeRequest(flipped) || !f.ownChangeRequest(c) || f.ownChangeRequest(c) {
		t.Error("change requests: a flipped mode, the request, a replay")
	}
}

func TestValidChange(t *testing.T) {
	mode := func(m ...ModeChange) Change {
		return Change{Kind: ChangeMode, Channel: "#c", Actor: "op!u@h", ActorDID: "did:plc:op", Modes: m}
	}
	many := make([]ModeChange, maxModesPerChange+1)
	for i := range many {
		many[i] = ModeChange{Add: true, Mode: "m"}
	}
	tests := []struct {
		name string
		c    Change
		want bool
	}{
		{"flags and bans", mode(ModeChange{Add: true, Mode: "t"}, ModeChange{Add: true, Mode: "b", Arg: "*!*@spam"}), true},
		{"ops never cross", mode(ModeChange{Add: true, Mode: "o", Arg: "did:plc:x"}), false},
		{"keys never cross", mode(ModeChange{Add: true, Mode: "k", Arg: "secret"}), false},
		{"a flag with an argument", mode(ModeChange{Add: true, Mode: "m", Arg: "x"}), false},
		{"a mask with a space", mode(ModeChange{Add: true, Mode: "b", Arg: "a b"}), false},
		{"no modes", mode(), false},
		{"too many modes", mode(many...), false},
		{"a bad actor DID", Change{Kind: ChangeMode, Channel: "#c", ActorDID: "bob", Modes: []ModeChange{{Mode: "m"}}}, false},
		{"a pin", Change{Kind: ChangePin, Channel: "#c", MsgID: ulid.Make().String()}, true},
		{"a pin of no msgid", Change{Kind: ChangePin, Channel: "#c", MsgID: "x"}, false},
		{"an unknown kind", Change{Kind: "kick", Channel: "#c"}, false},
		{"an actor with a line break", Change{Kind: ChangeUnpin, Channel: "#c", MsgID: ulid.Make().String(), Actor: "a\r\nb"}, false},
	}
	for _, tt := range tests {
		if got := validChange(&tt.c); got != tt.want {
			t.Errorf("%s: validChange = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReactionOf(t *testing.T) {
	tests := []struct {
		tags        map[string]string
		emoji, root string
		remove      bool
	}{
		{map[string]string{"+react": "👍", "+reply": "R"}, "👍", "R", false},
		{map[string]string{"+draft/react": "🎉", "+draft/reply": "R"}, "🎉", "R", false},
		{map[string]string{"+freeq.at/unreact": "👍", "+reply": "R"}, "👍", "R", true},
		{map[string]string{"+reply": "R"}, "", "R", true},
	}
	for _, tt := range tests {
		emoji, remove, root := reactionOf(tt.tags)
		if emoji != tt.emoji || remove != tt.remove || root != tt.root {
			t.Errorf("reactionOf(%v) = %q %v %q", tt.tags, emoji, remove, root)
		}
	}
}

func TestRemoteMember(t *testing.T) {
	peer := Peer{DID: "did:web:a.example"}
	tests := []struct {
		nick, user, did string
		ok              bool
		want            fsm.RemoteMember
	}{
		{"carol", "c", "did:plc:carol", true, fsm.RemoteMember{Nick: "carol", User: "c", Host: "a.example", DID: "did:plc:carol"}},
		{"ca rol\r\n", "", "", true, fsm.RemoteMember{Nick: "carol", User: "~remote", Host: "a.example"}},
		{"", "u", "", false, fsm.RemoteMember{}},
		{"#chan", "u", "", false, fsm.RemoteMember{}},
		{"carol", "u", "not-a-did", false, fsm.RemoteMember{}},
	}
	for _, tt := range tests {
		got, ok := remoteMember(peer, tt.nick, tt.user, tt.did)
		if ok != tt.ok || (ok && (got.Nick != tt.want.Nick || got.User != tt.want.User || got.Host != tt.want.Host || got.DID != tt.want.DID)) {
			t.Errorf("remoteMember(%q, %q, %q) = %+v, %v", tt.nick, tt.user, tt.did, got, ok)
		}
	}
}
