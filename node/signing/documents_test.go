package signing

import (
	"errors"
	"slices"
	"testing"
)

const (
	testDID   = "did:plc:k2n3e2vsihf3farequ44t5j7"
	testMsgID = "01KYVT5Z8Q0000000000000000"
	rootID    = "01KYVT1W2P0000000000000000"
)

func TestMessageCanonical(t *testing.T) {
	env := Envelope{From: testDID, MsgID: testMsgID, Venue: mustChannel(t, "#freeq")}
	const base = `"from":"did:plc:k2n3e2vsihf3farequ44t5j7","msgid":"01KYVT5Z8Q0000000000000000","target":"#freeq"}`
	const shipIt = `{"body":"sha256:bef4261f394bf71fd2b565cd76396ac9ed7953f9110c69ee49d7a82871238fbf",`
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{"plain", Message{Envelope: env, Body: "ship it"}, shipIt + base},
		{
			"excluded tags are not covered",
			Message{Envelope: env, Body: "ship it", Tags: map[string]string{
				"account": testDID, "time": "2026-01-01T00:00:00.000Z", "msgid": "X", "+freeq.at/origin": "peer",
				"+freeq.at/reactions": "👍:3", "+typing": "active", "+freeq.at/av-session": "s", "batch": "b",
				"label": "l", "+freeq.at/multiline": "1", TagSig: "ed25519:x:y", "+freeq.at/commit-verified": "true",
				"freeq.at/event": "server-tag-without-plus", "+freeq.at/parent": "not in the closed set",
			}},
			shipIt + base,
		},
		{
			"empty coord values are omitted",
			Message{Envelope: env, Body: "ship it", Tags: map[string]string{"+freeq.at/media-url": "", "+freeq.at/ref": ""}},
			shipIt + base,
		},
		{
			"coord keys unprefixed and values verbatim",
			Message{Envelope: env, Body: "ship it", Tags: map[string]string{"+freeq.at/link-title": "a;b c\\d", "+freeq.at/media-h": "480"}},
			shipIt + `"coord":{"link-title":"a;b c\\d","media-h":"480"},` + base,
		},
		{
			"edit and reply",
			Message{Envelope: env, Body: "ship it", Reply: rootID, Edit: rootID},
			shipIt + `"edit":"01KYVT1W2P0000000000000000",` + `"from":"did:plc:k2n3e2vsihf3farequ44t5j7","msgid":"01KYVT5Z8Q0000000000000000","reply":"01KYVT1W2P0000000000000000","target":"#freeq"}`,
		},
		{
			"empty body still hashes",
			Message{Envelope: env},
			`{"body":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",` + base,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustCanonical(t, tt.msg); string(got) != tt.want {
				t.Fatalf("canonical\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDocumentErrors(t *testing.T) {
	venue := mustChannel(t, "#freeq")
	env := Envelope{From: testDID, MsgID: testMsgID, Venue: venue}
	tests := []struct {
		name  string
		doc   Document
		field string // empty: not a missing-field error
		want  error
	}{
		{"message without from", Message{Envelope: Envelope{MsgID: testMsgID, Venue: venue}}, "from", ErrMissingField},
		{"message without msgid", Message{Envelope: Envelope{From: testDID, Venue: venue}}, "msgid", ErrMissingField},
		{"message without venue", Message{Envelope: Envelope{From: testDID, MsgID: testMsgID}}, "", ErrNoVenue},
		{"delete without subject", Mutation{Envelope: env, Kind: KindDelete}, "subject", ErrMissingField},
		{"react without emoji", Mutation{Envelope: env, Kind: KindReact, Subject: rootID}, "emoji", ErrMissingField},
		{"unreact without emoji", Mutation{Envelope: env, Kind: KindUnreact, Subject: rootID}, "emoji", ErrMissingField},
		{"unknown mutation kind", Mutation{Envelope: env, Kind: "pin", Subject: rootID}, "", nil},
		{"coordination without event", Coordination{Envelope: env, Payload: "{}"}, "event", ErrMissingField},
		{"act without id", Act{Venue: venue, Tags: map[string]string{TagFrom: testDID}}, "id", ErrMissingField},
		{"invalid UTF-8", Mutation{Envelope: env, Kind: KindReact, Subject: rootID, Emoji: "\xff"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.doc.Canonical()
			if err == nil {
				t.Fatal("Canonical succeeded, want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			var missing *MissingFieldError
			if tt.field != "" && (!errors.As(err, &missing) || missing.Field != tt.field) {
				t.Fatalf("error %v, want missing field %q", err, tt.field)
			}
		})
	}
}

func TestDeleteIgnoresEmoji(t *testing.T) {
	env := Envelope{From: testDID, MsgID: testMsgID, Venue: mustChannel(t, "#freeq")}
	a := mustCanonical(t, Mutation{Envelope: env, Kind: KindDelete, Subject: rootID})
	b := mustCanonical(t, Mutation{Envelope: env, Kind: KindDelete, Subject: rootID, Emoji: "👍"})
	if string(a) != string(b) {
		t.Fatalf("a delete covered an emoji: %s", b)
	}
}

func TestCoordinationRefFallsBackToTaskID(t *testing.T) {
	env := Envelope{From: testDID, MsgID: testMsgID, Venue: mustChannel(t, "#swarm")}
	tests := []struct {
		name string
		tags map[string]string
		ref  string
	}{
		{"ref", map[string]string{TagEvent: "task_update", TagRef: "R", TagTaskID: "T"}, "R"},
		{"task-id", map[string]string{TagEvent: "task_update", TagTaskID: "T"}, "T"},
		{"neither", map[string]string{TagEvent: "task_update"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := DocumentFromTags("TAGMSG", env, "", tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			got := mustCanonical(t, doc)
			want := mustCanonical(t, Coordination{Envelope: env, Event: "task_update", Ref: tt.ref})
			if string(got) != string(want) {
				t.Fatalf("canonical\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestDocumentFromTags(t *testing.T) {
	env := Envelope{From: testDID, MsgID: testMsgID, Venue: mustChannel(t, "#freeq")}
	tests := []struct {
		name    string
		command string
		tags    map[string]string
		want    Document
		wantErr error
	}{
		{"privmsg", "PRIVMSG", map[string]string{TagDraftReply: rootID}, Message{Envelope: env, Body: "hi", Reply: rootID}, nil},
		{"notice edit", "notice", map[string]string{TagDraftEdit: rootID}, Message{Envelope: env, Body: "hi", Edit: rootID}, nil},
		{"+reply wins over +draft/reply", "PRIVMSG", map[string]string{TagReply: "A", TagDraftReply: "B"}, Message{Envelope: env, Body: "hi", Reply: "A"}, nil},
		{"delete", "TAGMSG", map[string]string{TagDelete: rootID}, Mutation{Envelope: env, Kind: KindDelete, Subject: rootID}, nil},
		{"draft react", "TAGMSG", map[string]string{TagDraftReact: "🎉", TagReply: rootID}, Mutation{Envelope: env, Kind: KindReact, Subject: rootID, Emoji: "🎉"}, nil},
		{"unreact", "TAGMSG", map[string]string{TagUnreact: "🎉", TagDraftReply: rootID}, Mutation{Envelope: env, Kind: KindUnreact, Subject: rootID, Emoji: "🎉"}, nil},
		{"act", "TAGMSG", map[string]string{TagAct: "handoff", TagFrom: "did:plc:x", "+freeq.at/act-verb": "offer"}, Act{ID: testMsgID, Venue: env.Venue, Tags: map[string]string{TagAct: "handoff", TagFrom: "did:plc:x", "+freeq.at/act-verb": "offer"}}, nil},
		{"typing", "TAGMSG", map[string]string{"+typing": "active"}, nil, ErrNotSignable},
		{"join", "JOIN", nil, nil, ErrNotSignable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := DocumentFromTags(tt.command, env, "hi", tt.tags)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, want := mustCanonical(t, doc), mustCanonical(t, tt.want)
			if string(got) != string(want) {
				t.Fatalf("canonical\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestActCoversOnlyActTags(t *testing.T) {
	tags := map[string]string{
		TagAct: "handoff", "+freeq.at/act-verb": "offer", "+freeq.at/act-x-custom": "kept",
		TagFrom: "did:plc:eliza", "+freeq.at/actor-class": "agent", TagEventID: "01X", TagSig: "ed25519:a:b",
		"msgid": "server", "freeq.at/act-unprefixed": "dropped", "+freeq.at/action": "dropped",
	}
	got := mustCanonical(t, Act{ID: "01X", Venue: mustChannel(t, "#Ops"), Tags: tags})
	want := `{"act":"handoff","act-verb":"offer","act-x-custom":"kept","from":"did:plc:eliza","id":"01X","target":"#ops"}`
	if string(got) != want {
		t.Fatalf("canonical\n got %s\nwant %s", got, want)
	}
}

func TestCoordKeysIsClosedAndSorted(t *testing.T) {
	keys := CoordKeys()
	if len(keys) != 18 || !slices.IsSorted(keys) {
		t.Fatalf("CoordKeys = %v", keys)
	}
	keys[0] = "mutated"
	if CoordKeys()[0] != "event" {
		t.Fatal("CoordKeys shares its backing array")
	}
}

func TestSigFromTags(t *testing.T) {
	tests := []struct {
		tags map[string]string
		want string
	}{
		{map[string]string{TagSig: "a"}, "a"},
		{map[string]string{"freeq.at/sig": "b"}, "b"},
		{map[string]string{TagSig: "a", "freeq.at/sig": "b"}, "a"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := SigFromTags(tt.tags); got != tt.want {
			t.Errorf("SigFromTags(%v) = %q, want %q", tt.tags, got, tt.want)
		}
	}
}
