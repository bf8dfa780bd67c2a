package media

import (
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func upload(id, did string, size int64) RecordMedia {
	return RecordMedia{Object: MediaObject{ID: id, Holder: "node-a", Size: size, MIME: "image/png", Uploader: did}, Quota: 1000}
}

// TestDeleteMedia: the uploader, a server operator and the holder's retention delete an upload;
// anyone else is refused; the uploader's quota and the deployment's budget get the bytes back.
func TestDeleteMedia(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(fsmtest.World(didAlice, didBob)...)
	opDID := "did:plc:operator"
	h.OK(fsm.RegisterSession{ID: "s-op2", Node: "node-a", Nick: "op2", User: "u", Host: "h", DID: opDID, Oper: true})
	h.OK(upload("m1", didAlice, 600), upload("m2", didAlice, 300), upload("m3", didBob, 100))
	for _, c := range []struct {
		name string
		cmd  DeleteMedia
		want fsm.Code
	}{
		{"someone else", DeleteMedia{ID: "m1", DID: didBob}, ErrMediaNotYours},
		{"unknown", DeleteMedia{ID: "nope", DID: didAlice}, ErrMediaNotFound},
		{"neither a DID nor expired", DeleteMedia{ID: "m1"}, fsm.ErrInvalid},
		{"expired by another holder", DeleteMedia{ID: "m1", Expired: true, Holder: "node-b"}, ErrMediaNotYours},
		{"the uploader", DeleteMedia{ID: "m1", DID: didAlice}, fsm.OK},
		{"again", DeleteMedia{ID: "m1", DID: didAlice}, ErrMediaNotFound},
		{"an operator session's DID", DeleteMedia{ID: "m2", DID: opDID}, fsm.OK},
		{"a configured operator", DeleteMedia{ID: "m3", DID: "did:plc:cfgop", ServerOper: true}, fsm.OK},
	} {
		if got := h.Do(c.cmd).Code; got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	h.Read(func(st *fsm.State) {
		if Of(st).Usage(didAlice) != 0 || Of(st).Usage(didBob) != 0 {
			t.Errorf("usage left: %d %d", Of(st).Usage(didAlice), Of(st).Usage(didBob))
		}
	})
	h.OK(upload("m4", didBob, 10))
	if got := h.Do(DeleteMedia{ID: "m4", Expired: true, Holder: "node-a"}).Code; got != fsm.OK {
		t.Fatalf("retention: %v", got)
	}
}

// TestMediaTotalBudget: many DIDs, each under its quota, stop at the deployment's budget.
func TestMediaTotalBudget(t *testing.T) {
	h := fsmtest.NewHarness(t)
	refused := -1
	for i := range 20 {
		cmd := upload("m"+string(rune('a'+i)), "did:key:z"+string(rune('a'+i)), 900)
		cmd.Total = 5000
		if r := h.Do(cmd); r.Code == ErrMediaFull {
			refused = i
			break
		} else if r.Code != fsm.OK {
			t.Fatalf("upload %d: %v", i, r.Code)
		}
	}
	if refused != 5 {
		t.Fatalf("refused at upload %d, want 5 (5 × 900 ≤ 5000 < 6 × 900)", refused)
	}
	h.OK(DeleteMedia{ID: "ma", DID: "did:key:za"})
	ok := upload("mz", "did:key:zz", 900)
	ok.Total = 5000
	h.OK(ok)
}
