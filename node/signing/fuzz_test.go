package signing

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/palaver-chat/palaver/node/canonical"
)

func FuzzParseSigTag(f *testing.F) {
	for _, seed := range []string{
		"ed25519:NHUPmL1Z_PyUbaRaqr6TOw:_82Len7Z3lcnJsRKEZ9fYPfR4UqC0KhkxW01m9LTeqXN36TPPNdN-jROTIWYFvjiPyEXZUH7ZCyEJC4f0JH_BQ",
		"ml-dsa-87:NHUPmL1Z_PyUbaRaqr6TOw:_82Len7Z3lcnJsRKEZ9fYPfR4UqC0KhkxW01m9LTeqXN36TPPNdN-jROTIWYFvjiPyEXZUH7ZCyEJC4f0JH_BQ",
		"/82Len7Z3lcnJsRKEZ9fYPfR4UqC0KhkxW01m9LTeqXN36TPPNdN+jROTIWYFvjiPyEXZUH7ZCyEJC4f0JH/BQ==",
		"ed25519::", "::", ":", "", "ed25519:x:y:z",
	} {
		f.Add(seed)
	}
	_, pub := testKey(1)
	keys := Keys{}
	keys.Add(pub)
	f.Fuzz(func(t *testing.T, v string) {
		tag, err := ParseSigTag(v)
		if err == nil {
			if tag.String() != v {
				t.Fatalf("ParseSigTag(%q) round-trips to %q", v, tag.String())
			}
			if len(tag.Signature) != 64 || len(tag.KID) != 22 {
				t.Fatalf("ParseSigTag(%q) accepted %d-byte signature, %d-char kid", v, len(tag.Signature), len(tag.KID))
			}
		}
		verdict, _ := Verify([]byte("doc"), v, keys.Lookup)
		if verdict == Valid {
			t.Fatalf("random tag %q verified", v)
		}
		if err != nil && verdict != Unverifiable {
			t.Fatalf("unparseable tag %q gave %v", v, verdict)
		}
	})
}

func FuzzParseVenue(f *testing.F) {
	for _, seed := range []string{"#Ops", "&x", "dm:did:plc:b,did:plc:a", "dm:", "dm:did:a", "alice", "", "#"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVenue(s)
		if err != nil {
			return
		}
		again, err := ParseVenue(v.String())
		if err != nil || again != v {
			t.Fatalf("ParseVenue(%q) = %q, which reparses to %q, %v", s, v, again, err)
		}
	})
}

// FuzzDocuments builds every document kind from arbitrary wire inputs: no
// panic, and every canonical produced is JCS (a fixed point of Transform).
func FuzzDocuments(f *testing.F) {
	f.Add("PRIVMSG", "did:plc:a", "01KYVT5Z8Q0000000000000000", "#Ops", "did:plc:b", "ship it", "+freeq.at/media-url", "https://x/y.png", "+reply", "01KYVT1W2P0000000000000000")
	f.Add("TAGMSG", "did:plc:a", "01X", "alice", "did:plc:b", "", "+react", "👍", "+reply", "01R")
	f.Add("TAGMSG", "did:plc:a", "01X", "#swarm", "", "", "+freeq.at/event", "task_request", "+freeq.at/payload", "%7B%7D")
	f.Add("TAGMSG", "", "01X", "#ops", "", "", "+freeq.at/act", "handoff", "+freeq.at/from", "did:plc:eliza")
	f.Add("TAGMSG", "did:plc:a", "01X", "#ops", "", "", "+draft/delete", "01R", "+freeq.at/unreact", "x")
	f.Add("NOTICE", "did:plc:a", "", "", "", "\x00\u2028", "+draft/edit", "\xff", "", "")
	f.Fuzz(func(t *testing.T, command, from, msgid, target, peer, body, k1, v1, k2, v2 string) {
		venue, _ := ResolveVenue(target, from, peer)
		env := Envelope{From: from, MsgID: msgid, Venue: venue}
		tags := map[string]string{k1: v1, k2: v2}
		docs := []Document{
			Message{Envelope: env, Body: body, Reply: v1, Edit: v2, Tags: tags},
			Mutation{Envelope: env, Kind: k1, Subject: v1, Emoji: v2},
			Mutation{Envelope: env, Kind: KindReact, Subject: v1, Emoji: v2},
			Coordination{Envelope: env, Event: v1, Payload: body, Ref: v2, Evidence: k2},
			Act{ID: msgid, Venue: venue, Tags: tags},
		}
		if doc, err := DocumentFromTags(command, env, body, tags); err == nil {
			docs = append(docs, doc)
		}
		for _, doc := range docs {
			out, err := doc.Canonical()
			if err != nil {
				continue
			}
			again, err := canonical.Transform(out)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%T canonical %q is not JCS: %q, %v", doc, out, again, err)
			}
			var fields map[string]any
			if err := json.Unmarshal(out, &fields); err != nil {
				t.Fatalf("%T canonical %q does not decode: %v", doc, out, err)
			}
			for _, key := range []string{"from", "target"} {
				if s, _ := fields[key].(string); s == "" {
					t.Fatalf("%T canonical %q lacks %s", doc, out, key)
				}
			}
		}
	})
}

func FuzzVerifyBundle(f *testing.F) {
	f.Add([]byte(`{"bundle_version":"2","messages":[]}`))
	f.Add([]byte(`{"bundle_version":"2","server_public_key":"iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w","message_count":1,"keys":{},"did_keys":{},"messages":[{"msgid":"01","channel":"#a","sender":"x","sender_did":"did:plc:x","text":"t","timestamp":1,"signature":"ed25519:NHUPmL1Z_PyUbaRaqr6TOw:AAAA","replaces_msgid":null,"tags":{"+reply":"01"}}],"bundle_signature":"AAAA"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"messages":[{"tags":{"+freeq.at/sig":"x"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		report, err := VerifyBundle(data)
		if err == nil && report.BundleSignature != Valid {
			t.Fatalf("VerifyBundle succeeded with bundle signature %v", report.BundleSignature)
		}
	})
}
