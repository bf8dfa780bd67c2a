package fsm

import (
	"bytes"
	"encoding/json"
)

// mediaSamples are the media commands of sampleCommands, every field set.
func mediaSamples() []Command {
	return []Command{
		SetMediaKey{Key: bytes.Repeat([]byte{1}, MediaKeySize)},
		RecordMedia{Object: MediaObject{ID: "m1", Holder: "n1", Size: 10, MIME: "image/png", Filename: "a.png", Private: true,
			Uploader: "did:plc:alice", Channel: "#c", Width: 2, Height: 3, At: 5}, Quota: 100},
		SetPreKeyBundle{DID: "did:plc:alice", Bundle: json.RawMessage(`{"identity_key":"x"}`)},
		SetGroupKeys{Channel: "#c", DID: "did:plc:alice", Epoch: 3, Keys: map[string]string{"did:plc:bob": "EGK1:x"}},
		SetMediaSpace{Channel: "#c", Ref: "at://did:plc:alice/space/1", Type: "space", DID: "did:plc:alice", Max: 10},
	}
}

// randomMediaCommand draws a media command from the generator's small universe.
func randomMediaCommand(c chooser) Command {
	did := func() string { return pick(c, genDIDs[2:]) }
	switch c.intn(7) {
	case 0:
		return SetMediaKey{Key: bytes.Repeat([]byte{byte(c.intn(3))}, pick(c, []int{MediaKeySize, MediaKeySize, 3}))}
	case 1:
		return RecordMedia{Object: MediaObject{ID: pick(c, []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", ""}), Holder: pick(c, genNodes),
			Size: int64(c.intn(1000)), MIME: "image/png", Uploader: did(), Channel: pick(c, genChannels)},
			Quota: pick(c, []int64{0, 1500})}
	case 2:
		return SetPreKeyBundle{DID: did(), Bundle: json.RawMessage(pick(c, []string{`{"k":1}`, `[]`, `{}`}))}
	case 3, 4, 5:
		return SetGroupKeys{Channel: pick(c, genChannels[:4]), DID: pick(c, genDIDs[2:4]), Epoch: int64(c.intn(20)),
			Keys: map[string]string{"did:plc:d1": "EGK1:a", "did:plc:d2": "EGK1:b"}}
	}
	return SetMediaSpace{Channel: pick(c, genChannels), Ref: pick(c, []string{"r1", "r2"}), Type: "space", DID: did(), Max: pick(c, []int{0, 2})}
}

// mediaGolden are the encodings of mediaSamples, as persisted in Raft logs.
func mediaGolden(env string) []string {
	return []string{
		"\x28\x00" + env + `{"key":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="}}`,
		"\x29\x00" + env + `{"object":{"id":"m1","holder":"n1","size":10,"mime":"image/png","filename":"a.png","private":true,"uploader":"did:plc:alice","channel":"#c","w":2,"h":3,"at":5},"quota":100}}`,
		"\x2a\x00" + env + `{"did":"did:plc:alice","bundle":{"identity_key":"x"}}}`,
		"\x2b\x00" + env + `{"channel":"#c","did":"did:plc:alice","epoch":3,"keys":{"did:plc:bob":"EGK1:x"}}}`,
		"\x2c\x00" + env + `{"channel":"#c","ref":"at://did:plc:alice/space/1","type":"space","did":"did:plc:alice","max":10}}`,
	}
}
