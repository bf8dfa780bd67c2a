package fsm

import "testing"

func init() {
	extraSamples = append(extraSamples, DeleteMedia{ID: "m1", DID: "did:plc:alice", ServerOper: true})
	extraGolden = append(extraGolden,
		"\x2d\x00"+`{"rid":"r1","node":"n1","ts":1700000000000,"body":{"id":"m1","did":"did:plc:alice","server_oper":true}}`)
	extraGenerators = append(extraGenerators, func(c chooser) Command {
		if c.intn(3) == 0 {
			return DeleteMedia{ID: pick(c, []string{"m1", "m2", "m3"}), Expired: true, Holder: pick(c, genNodes)}
		}
		return DeleteMedia{ID: pick(c, []string{"m1", "m2", "m3", "m4"}), DID: pick(c, genDIDs[2:]), ServerOper: c.intn(4) == 0}
	})
}

func upload(id, did string, size int64) RecordMedia {
	return RecordMedia{Object: MediaObject{ID: id, Holder: "node-a", Size: size, MIME: "image/png", Uploader: did}, Quota: 1000}
}

// TestDeleteMedia: the uploader, a server operator and the holder's retention delete an upload;
// anyone else is refused; the uploader's quota and the deployment's budget get the bytes back.
func TestDeleteMedia(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	opDID := "did:plc:operator"
	h.mustOK(RegisterSession{ID: "s-op2", Node: "node-a", Nick: "op2", User: "u", Host: "h", DID: opDID, Oper: true})
	h.mustOK(upload("m1", didAlice, 600), upload("m2", didAlice, 300), upload("m3", didBob, 100))
	for _, c := range []struct {
		name string
		cmd  DeleteMedia
		want Code
	}{
		{"someone else", DeleteMedia{ID: "m1", DID: didBob}, ErrMediaNotYours},
		{"unknown", DeleteMedia{ID: "nope", DID: didAlice}, ErrMediaNotFound},
		{"neither a DID nor expired", DeleteMedia{ID: "m1"}, ErrInvalid},
		{"expired by another holder", DeleteMedia{ID: "m1", Expired: true, Holder: "node-b"}, ErrMediaNotYours},
		{"the uploader", DeleteMedia{ID: "m1", DID: didAlice}, OK},
		{"again", DeleteMedia{ID: "m1", DID: didAlice}, ErrMediaNotFound},
		{"an operator session's DID", DeleteMedia{ID: "m2", DID: opDID}, OK},
		{"a configured operator", DeleteMedia{ID: "m3", DID: "did:plc:cfgop", ServerOper: true}, OK},
	} {
		if got := h.apply(c.cmd).Code; got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	h.read(func(st *State) {
		if st.MediaUsage(didAlice) != 0 || st.MediaUsage(didBob) != 0 {
			t.Errorf("usage left: %d %d", st.MediaUsage(didAlice), st.MediaUsage(didBob))
		}
	})
	h.mustOK(upload("m4", didBob, 10))
	if got := h.apply(DeleteMedia{ID: "m4", Expired: true, Holder: "node-a"}).Code; got != OK {
		t.Fatalf("retention: %v", got)
	}
}

// TestMediaTotalBudget: many DIDs, each under its quota, stop at the deployment's budget.
func TestMediaTotalBudget(t *testing.T) {
	h := newHarness(t)
	refused := -1
	for i := range 20 {
		cmd := upload("m"+string(rune('a'+i)), "did:key:z"+string(rune('a'+i)), 900)
		cmd.Total = 5000
		if r := h.apply(cmd); r.Code == ErrMediaFull {
			refused = i
			break
		} else if r.Code != OK {
			t.Fatalf("upload %d: %v", i, r.Code)
		}
	}
	if refused != 5 {
		t.Fatalf("refused at upload %d, want 5 (5 × 900 ≤ 5000 < 6 × 900)", refused)
	}
	h.mustOK(DeleteMedia{ID: "ma", DID: "did:key:za"})
	ok := upload("mz", "did:key:zz", 900)
	ok.Total = 5000
	h.mustOK(ok)
}
