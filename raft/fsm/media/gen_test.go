package media

import (
	"bytes"
	"encoding/json"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// mediaSamples are the media commands of sampleCommands, every field set.
func mediaSamples() []fsm.Command {
	return []fsm.Command{
		SetMediaKey{Key: bytes.Repeat([]byte{1}, MediaKeySize)},
		RecordMedia{Object: MediaObject{ID: "m1", Holder: "n1", Size: 10, MIME: "image/png", Filename: "a.png", Private: true,
			Uploader: "did:plc:alice", Channel: "#c", Width: 2, Height: 3, At: 5}, Quota: 100},
		SetPreKeyBundle{DID: "did:plc:alice", Bundle: json.RawMessage(`{"identity_key":"x"}`)},
		SetGroupKeys{Channel: "#c", DID: "did:plc:alice", Epoch: 3, Keys: map[string]string{"did:plc:bob": "EGK1:x"}},
		SetMediaSpace{Channel: "#c", Ref: "at://did:plc:alice/space/1", Type: "space", DID: "did:plc:alice", Max: 10},
	}
}

// randomMediaCommand draws a media command from the generator's small universe.
func randomMediaCommand(c *fsmtest.Chooser) fsm.Command {
	did := func() string { return fsmtest.Pick(c, fsmtest.GenDIDs[2:]) }
	switch c.Intn(7) {
	case 0:
		return SetMediaKey{Key: bytes.Repeat([]byte{byte(c.Intn(3))}, fsmtest.Pick(c, []int{MediaKeySize, MediaKeySize, 3}))}
	case 1:
		return RecordMedia{Object: MediaObject{ID: fsmtest.Pick(c, []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", ""}), Holder: fsmtest.Pick(c, fsmtest.GenNodes),
			Size: int64(c.Intn(1000)), MIME: "image/png", Uploader: did(), Channel: fsmtest.Pick(c, fsmtest.GenChannels)},
			Quota: fsmtest.Pick(c, []int64{0, 1500})}
	case 2:
		return SetPreKeyBundle{DID: did(), Bundle: json.RawMessage(fsmtest.Pick(c, []string{`{"k":1}`, `[]`, `{}`}))}
	case 3, 4, 5:
		return SetGroupKeys{Channel: fsmtest.Pick(c, fsmtest.GenChannels[:4]), DID: fsmtest.Pick(c, fsmtest.GenDIDs[2:4]), Epoch: int64(c.Intn(20)),
			Keys: map[string]string{"did:plc:d1": "EGK1:a", "did:plc:d2": "EGK1:b"}}
	}
	return SetMediaSpace{Channel: fsmtest.Pick(c, fsmtest.GenChannels), Ref: fsmtest.Pick(c, []string{"r1", "r2"}), Type: "space", DID: did(), Max: fsmtest.Pick(c, []int{0, 2})}
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
