package signing

import "testing"

func benchMessage(b *testing.B) Message {
	venue, err := ChannelVenue("#Swarm")
	if err != nil {
		b.Fatal(err)
	}
	return Message{
		Envelope: Envelope{From: testDID, MsgID: testMsgID, Venue: venue},
		Body:     "revised: use the cached index — \"quoted\" ✓",
		Reply:    rootID,
		Edit:     rootID,
		Tags: map[string]string{
			"+freeq.at/event": "task_result", "+freeq.at/payload": "%7B%22ok%22%3Atrue%7D",
			"+freeq.at/ref": "01KYVT2BBB0000000000000000", "+freeq.at/reactions": "👍:3", "time": "2026-01-01T00:00:00.000Z",
		},
	}
}

func BenchmarkCanonicalMessage(b *testing.B) {
	msg := benchMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := msg.Canonical(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	priv, _ := testKey(1)
	canon := mustCanonical(b, benchMessage(b))
	b.ReportAllocs()
	for b.Loop() {
		Sign(priv, canon)
	}
}

func BenchmarkVerify(b *testing.B) {
	priv, pub := testKey(1)
	keys := Keys{}
	keys.Add(pub)
	canon := mustCanonical(b, benchMessage(b))
	tag := Sign(priv, canon)
	b.ReportAllocs()
	for b.Loop() {
		if verdict, reason := Verify(canon, tag, keys.Lookup); verdict != Valid {
			b.Fatalf("Verify = %v (%s)", verdict, reason)
		}
	}
}
