package media

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func TestMediaCommands(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"})
	obj := func(id, did string, size int64) MediaObject {
		return MediaObject{ID: id, Holder: "node-a", Size: size, MIME: "image/png", Filename: "a.png", Uploader: did}
	}
	key := bytes.Repeat([]byte{7}, MediaKeySize)
	steps := []struct {
		name string
		cmd  fsm.Command
		code fsm.Code
	}{
		{"key", SetMediaKey{Key: key}, fsm.OK},
		{"second key ignored", SetMediaKey{Key: bytes.Repeat([]byte{8}, MediaKeySize)}, fsm.NoChange},
		{"short key", SetMediaKey{Key: []byte{1}}, fsm.ErrInvalid},
		{"upload", RecordMedia{Object: obj("m1", didAlice, 600), Quota: 1000}, fsm.OK},
		{"same id", RecordMedia{Object: obj("m1", didBob, 1)}, ErrMediaExists},
		{"over quota", RecordMedia{Object: obj("m2", didAlice, 401), Quota: 1000}, ErrMediaQuota},
		{"at quota", RecordMedia{Object: obj("m3", didAlice, 400), Quota: 1000}, fsm.OK},
		{"other DID has its own quota", RecordMedia{Object: obj("m4", didBob, 900), Quota: 1000}, fsm.OK},
		{"no holder", RecordMedia{Object: MediaObject{ID: "m5", Uploader: didAlice}}, fsm.ErrInvalid},
		{"long id", RecordMedia{Object: obj(strings.Repeat("x", MaxMediaIDLen+1), didAlice, 1)}, fsm.ErrInvalid},
		{"bundle", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`{"identity_key":"abc"}`)}, fsm.OK},
		{"bundle not an object", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`[1]`)}, fsm.ErrInvalid},
		{"bundle too big", SetPreKeyBundle{DID: didAlice, Bundle: json.RawMessage(`{"k":"` + strings.Repeat("a", MaxPreKeyBundle) + `"}`)}, fsm.ErrInvalid},
		{"group keys by a member", SetGroupKeys{Channel: "#c", DID: didBob, Epoch: 1, Keys: map[string]string{didBob: "EGK1:x"}}, fsm.ErrChanOpNeeded},
		{"group keys unknown channel", SetGroupKeys{Channel: "#nope", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "EGK1:x"}}, fsm.ErrNoSuchChannel},
		{"group keys empty", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1}, fsm.ErrInvalid},
		{"group keys epoch 1", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "EGK1:one", didAlice: "EGK1:a"}}, fsm.OK},
		{"group keys epoch 2", SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 2, Keys: map[string]string{didBob: "EGK1:two"}}, fsm.OK},
		{"space", SetMediaSpace{Channel: "#c", Ref: "space-1", Type: "t", DID: didAlice, Max: 1}, fsm.OK},
		{"space again", SetMediaSpace{Channel: "#c", Ref: "space-2", Type: "t", DID: didAlice, Max: 1}, fsm.NoChange},
	}
	for _, st := range steps {
		if res := h.Do(st.cmd); res.Code != st.code {
			t.Fatalf("%s: code %s, want %s", st.name, res.Code, st.code)
		}
	}
	h.OK(fsm.Join{Session: "s-bob", Channel: "#d"})
	if res := h.Do(SetMediaSpace{Channel: "#d", Ref: "space-3", DID: didBob, Max: 1}); res.Code != ErrMediaSpacesFull {
		t.Fatalf("second space at max 1: %s", res.Code)
	}
	h.Read(func(st *fsm.State) {
		if got := Of(st).Key(); !bytes.Equal(got, key) {
			t.Errorf("key %x", got)
		}
		if o, ok := Of(st).Object("m1"); !ok || o.At == 0 || o.Size != 600 {
			t.Errorf("m1 %+v %v", o, ok)
		}
		if u := Of(st).Usage(didAlice); u != 1000 {
			t.Errorf("alice usage %d", u)
		}
		if b, ok := Of(st).PreKeyBundle(didAlice); !ok || string(b) != `{"identity_key":"abc"}` {
			t.Errorf("bundle %s %v", b, ok)
		}
		got := Of(st).GroupKeysFor("#c", didBob)
		if len(got) != 2 || got[0] != (SealedKey{2, "EGK1:two"}) || got[1] != (SealedKey{1, "EGK1:one"}) {
			t.Errorf("bob's keys %+v", got)
		}
		if ch, _ := st.Channel("#c"); !ch.Encrypted() {
			t.Error("group keys left the channel without +E")
		}
		if sp, ok := Of(st).SpaceOf("#c"); !ok || sp.Ref != "space-1" {
			t.Errorf("space %+v", sp)
		}
		if ch, ok := Of(st).SpaceByRef("space-1"); !ok || ch != "#c" {
			t.Errorf("space by ref %q", ch)
		}
		acc := st.ChannelAccessOf("#c", didBob)
		if !acc.Exists || !acc.Member || acc.Manager || !acc.Restricted {
			t.Errorf("bob's access %+v", acc)
		}
	})
	// A snapshot restores the derived usage, so the quota holds after a restore.
	r := fsm.New(nil)
	if err := r.Restore(bytes.NewReader(fsmtest.Snapshot(t, h.Machine.Machine))); err != nil {
		t.Fatal(err)
	}
	h.Machine.Machine = r
	if res := h.Do(RecordMedia{Object: obj("m6", didAlice, 1), Quota: 1000}); res.Code != ErrMediaQuota {
		t.Fatalf("quota after restore: %s", res.Code)
	}
}

func TestGroupKeyEpochsBounded(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#c"})
	for e := int64(1); e <= MaxGroupKeyEpochs+3; e++ {
		h.OK(SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: e, Keys: map[string]string{didAlice: "k"}})
	}
	h.Read(func(st *fsm.State) {
		got := Of(st).GroupKeysFor("#c", didAlice)
		if len(got) != MaxGroupKeyEpochs || got[0].Epoch != MaxGroupKeyEpochs+3 || got[len(got)-1].Epoch != 4 {
			t.Fatalf("%d epochs, newest %d", len(got), got[0].Epoch)
		}
	})
}

// A channel created again under an old name starts without the old channel's group keys and
// media space.
func TestMediaStateFollowsIncarnation(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#c"},
		SetGroupKeys{Channel: "#c", DID: didAlice, Epoch: 1, Keys: map[string]string{didBob: "old"}},
		SetMediaSpace{Channel: "#c", Ref: "old-space", DID: didAlice},
		fsm.Part{Session: "s-alice", Channel: "#c"})
	h.Do(fsm.ExpireChannels{OwnedAfter: 1})
	h.Do(fsm.ExpireChannels{OwnedAfter: 1})
	h.OK(fsm.Join{Session: "s-bob", Channel: "#c"})
	h.Read(func(st *fsm.State) {
		if ch, _ := st.Channel("#c"); ch.FounderDID() != didBob {
			t.Fatalf("#c was not created again (founder %q)", ch.FounderDID())
		}
		if keys := Of(st).GroupKeysFor("#c", didBob); len(keys) != 0 {
			t.Errorf("old group keys served: %+v", keys)
		}
		if _, ok := Of(st).SpaceOf("#c"); ok {
			t.Error("old media space served")
		}
		if _, ok := Of(st).SpaceByRef("old-space"); ok {
			t.Error("old media space found by ref")
		}
	})
	// The new incarnation writes its own.
	h.OK(SetGroupKeys{Channel: "#c", DID: didBob, Epoch: 1, Keys: map[string]string{didBob: "new"}},
		SetMediaSpace{Channel: "#c", Ref: "new-space", DID: didBob})
	h.Read(func(st *fsm.State) {
		if keys := Of(st).GroupKeysFor("#c", didBob); len(keys) != 1 || keys[0].Sealed != "new" {
			t.Errorf("new group keys: %+v", keys)
		}
		if sp, ok := Of(st).SpaceOf("#c"); !ok || sp.Ref != "new-space" {
			t.Errorf("new space: %+v", sp)
		}
	})
}
