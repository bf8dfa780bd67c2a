package fsm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestMediaCommands(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	h.mustOK(Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"})
	obj := func(id, did string, size int64) MediaObject {
		return MediaObject{ID: id, Holder: "node-a", Size: size, MIME: "image/png", Filename: "a.png", Uploader: did}
	}
	key := bytes.Repeat([]byte{7}, MediaKeySize)
	steps := []struct {
		name string
		cmd  Command
		code Code
	}{
		{"key", SetMediaKey{Key: key}, OK},
		{"second key ignored", SetMediaKey{Key: bytes.Repeat([]byte{8}, MediaKeySize)}, NoChange},
		{"short key", SetMediaKey{Key: []byte{1}}, ErrInvalid},
		{"upload", RecordMedia{Object: obj("m1", didAlice, 600), Quota: 1000}, OK},
		{"same id", RecordMedia{Object: obj("m1", didBob, 1)}, ErrMediaExists},
		{"over quota", RecordMedia{Object: obj("m2", didAlice, 401), Quota: 1000}, ErrMediaQuota},
		{"at quota", RecordMedia{Object: obj("m3", didAlice, 400), Quota: 1000}, OK},
		{"other DID has its own quota", RecordMedia{Object: obj("m4", didBob, 900), Quota: 1000}, OK},
		{"no holder", RecordMedia{Object: MediaObject{ID: "m5", Uploader: didAlice}}, ErrInvalid},
		{"long id", RecordMedia{Object: obj(strings.Repeat("x", MaxMediaIDLen+1), didAlice, 1)}, ErrInvalid},
		{"bundle", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`{"identity_key":"abc"}`)}, OK},
		{"bundle not an object", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`[1]`)}, ErrInvalid},
		{"bundle too big", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`{"k":"` + strings.Repeat("a", MaxPreKeyBundle) + `"}`)}, ErrInvalid},
		{"group keys by a member", SetGroupKeys{Channel: "#c", DID: didBob, Epoch: 1, Keys: map[string]string{didBob: "EGK1:x"}}, ErrChanOpNeeded},
		{"group keys unknown channel", SetGroupKeys{Channel: "#nope", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "EGK1:x"}}, ErrNoSuchChannel},
		{"group keys empty", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1}, ErrInvalid},
		{"group keys epoch 1", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "EGK1:one", didAlice: "EGK1:a"}}, OK},
		{"group keys epoch 2", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 2, Keys: map[string]string{didBob: "EGK1:two"}}, OK},
		{"space", SetMediaSpace{Channel: "#c", Ref: "space-1", Type: "t", DID: didAlice, Max: 1}, OK},
		{"space again", SetMediaSpace{Channel: "#c", Ref: "space-2", Type: "t", DID: didAlice, Max: 1}, NoChange},
	}
	for _, st := range steps {
		if res := h.apply(st.cmd); res.Code != st.code {
			t.Fatalf("%s: code %s, want %s", st.name, res.Code, st.code)
		}
	}
	h.mustOK(Join{Session: "s-bob", Channel: "#d"})
	if res := h.apply(SetMediaSpace{Channel: "#d", Ref: "space-3", DID: didBob, Max: 1}); res.Code != ErrMediaSpacesFull {
		t.Fatalf("second space at max 1: %s", res.Code)
	}
	h.read(func(st *State) {
		if got := st.MediaKey(); !bytes.Equal(got, key) {
			t.Errorf("key %x", got)
		}
		if o, ok := st.MediaObject("m1"); !ok || o.At == 0 || o.Size != 600 {
			t.Errorf("m1 %+v %v", o, ok)
		}
		if u := st.MediaUsage(didAlice); u != 1000 {
			t.Errorf("alice usage %d", u)
		}
		if b, ok := st.PreKeyBundle(didAlice); !ok || string(b) != `{"identity_key":"abc"}` {
			t.Errorf("bundle %s %v", b, ok)
		}
		got := st.GroupKeysFor("#c", didBob)
		if len(got) != 2 || got[0] != (SealedKey{2, "EGK1:two"}) || got[1] != (SealedKey{1, "EGK1:one"}) {
			t.Errorf("bob's keys %+v", got)
		}
		if !st.channels["#c"].Encrypted {
			t.Error("group keys left the channel without +E")
		}
		if sp, ok := st.MediaSpaceOf("#c"); !ok || sp.Ref != "space-1" {
			t.Errorf("space %+v", sp)
		}
		if ch, ok := st.MediaSpaceByRef("space-1"); !ok || ch != "#c" {
			t.Errorf("space by ref %q", ch)
		}
		acc := st.ChannelAccessOf("#c", didBob)
		if !acc.Exists || !acc.Member || acc.Manager || !acc.Restricted {
			t.Errorf("bob's access %+v", acc)
		}
	})
	// A snapshot restores the derived usage, so the quota holds after a restore.
	r := New(quietLogger())
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, h.m))); err != nil {
		t.Fatal(err)
	}
	h.m = r
	if res := h.apply(RecordMedia{Object: obj("m6", didAlice, 1), Quota: 1000}); res.Code != ErrMediaQuota {
		t.Fatalf("quota after restore: %s", res.Code)
	}
}

func TestGroupKeyEpochsBounded(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	h.mustOK(Join{Session: "s-alice", Channel: "#c"})
	for e := int64(1); e <= MaxGroupKeyEpochs+3; e++ {
		h.mustOK(SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: e, Keys: map[string]string{didAlice: "k"}})
	}
	h.read(func(st *State) {
		got := st.GroupKeysFor("#c", didAlice)
		if len(got) != MaxGroupKeyEpochs || got[0].Epoch != MaxGroupKeyEpochs+3 || got[len(got)-1].Epoch != 4 {
			t.Fatalf("%d epochs, newest %d", len(got), got[0].Epoch)
		}
	})
}

// A channel created again under an old name starts without the old channel's group keys and
// media space.
func TestMediaStateFollowsIncarnation(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	h.mustOK(Join{Session: "s-alice", Channel: "#c"},
		SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "old"}},
		SetMediaSpace{Channel: "#c", Ref: "old-space", DID: didAlice},
		Part{Session: "s-alice", Channel: "#c"})
	h.apply(ExpireChannels{OwnedAfter: 1})
	h.apply(ExpireChannels{OwnedAfter: 1})
	h.mustOK(Join{Session: "s-bob", Channel: "#c"})
	h.read(func(st *State) {
		if st.channels["#c"].FounderDID != didBob {
			t.Fatalf("#c was not created again (founder %q)", st.channels["#c"].FounderDID)
		}
		if keys := st.GroupKeysFor("#c", didBob); len(keys) != 0 {
			t.Errorf("old group keys served: %+v", keys)
		}
		if _, ok := st.MediaSpaceOf("#c"); ok {
			t.Error("old media space served")
		}
		if _, ok := st.MediaSpaceByRef("old-space"); ok {
			t.Error("old media space found by ref")
		}
	})
	// The new incarnation writes its own.
	h.mustOK(SetGroupKeys{Channel: "#c", DID: didBob, Epoch: 1, Keys: map[string]string{didBob: "new"}},
		SetMediaSpace{Channel: "#c", Ref: "new-space", DID: didBob})
	h.read(func(st *State) {
		if keys := st.GroupKeysFor("#c", didBob); len(keys) != 1 || keys[0].Sealed != "new" {
			t.Errorf("new group keys: %+v", keys)
		}
		if sp, ok := st.MediaSpaceOf("#c"); !ok || sp.Ref != "new-space" {
			t.Errorf("new space: %+v", sp)
		}
	})
}
