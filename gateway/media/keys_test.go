package media

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

func TestPreKeyBundles(t *testing.T) {
	f := newFixture(t, nil)
	bundle := map[string]any{"identity_key": "abc", "signed_pre_key": map[string]any{"id": 1, "key": "def"}}
	for _, tc := range []struct {
		name   string
		token  string
		body   any
		status int
	}{
		{"another DID's bundle", "tok-bob", map[string]any{"did": didAlice, "bundle": bundle}, 403},
		{"no bearer", "", map[string]any{"did": didAlice, "bundle": bundle}, 401},
		{"missing bundle", "tok-alice", map[string]any{"did": didAlice}, 400},
		{"missing did", "tok-alice", map[string]any{"bundle": bundle}, 400},
		{"null bundle", "tok-alice", map[string]any{"did": didAlice, "bundle": nil}, 400},
		{"bundle not an object", "tok-alice", map[string]any{"did": didAlice, "bundle": []int{1}}, 400},
		{"oversized bundle", "tok-alice", map[string]any{"did": didAlice, "bundle": map[string]string{"k": strings.Repeat("a", fsmmedia.MaxPreKeyBundle)}}, 400},
		{"not JSON", "tok-alice", "nope", 400},
		{"own bundle", "tok-alice", map[string]any{"did": didAlice, "bundle": bundle}, 200},
	} {
		if resp, out := f.postJSON("/api/v1/keys", tc.token, tc.body); resp.StatusCode != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, resp.StatusCode, out, tc.status)
		}
	}
	resp, body := f.do("GET", "/api/v1/keys/"+didAlice, "", nil, nil)
	var got struct {
		Bundle map[string]any `json:"bundle"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil || got.Bundle["identity_key"] != "abc" {
		t.Fatalf("bundle: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.do("GET", "/api/v1/keys/"+didBob, "", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("no bundle: %d", resp.StatusCode)
	}
}

func TestGroupKeys(t *testing.T) {
	f := newFixture(t, nil)
	write := func(token, channel string, body any) (*http.Response, map[string]any) {
		return f.postJSON("/api/v1/channels/"+channel+"/groupkeys", token, body)
	}
	for _, tc := range []struct {
		name, token, channel string
		body                 any
		status               int
	}{
		{"a member who is not an op", "tok-bob", "priv", map[string]any{"epoch": 1, "keys": map[string]string{didBob: "EGK1:b"}}, 403},
		{"an outsider", "tok-carol", "priv", map[string]any{"epoch": 1, "keys": map[string]string{didBob: "EGK1:b"}}, 403},
		{"unknown channel", "tok-alice", "nope", map[string]any{"epoch": 1, "keys": map[string]string{didBob: "EGK1:b"}}, 404},
		{"no epoch", "tok-alice", "priv", map[string]any{"keys": map[string]string{didBob: "EGK1:b"}}, 400},
		{"negative epoch", "tok-alice", "priv", map[string]any{"epoch": -1, "keys": map[string]string{didBob: "EGK1:b"}}, 400},
		{"no keys", "tok-alice", "priv", map[string]any{"epoch": 1, "keys": map[string]string{}}, 400},
		{"key of a non-DID", "tok-alice", "priv", map[string]any{"epoch": 1, "keys": map[string]string{"bob": "EGK1:b"}}, 400},
		{"oversized sealed key", "tok-alice", "priv", map[string]any{"epoch": 1, "keys": map[string]string{didBob: strings.Repeat("k", fsmmedia.MaxSealedKey+1)}}, 400},
		{"epoch 1 by the founder", "tok-alice", "priv", map[string]any{"epoch": 1, "keys": map[string]string{didBob: "EGK1:b1", didAlice: "EGK1:a1"}}, 200},
		{"epoch 2 by the founder", "tok-alice", "%23priv", map[string]any{"epoch": 2, "keys": map[string]string{didBob: "EGK1:b2"}}, 200},
	} {
		if resp, out := write(tc.token, tc.channel, tc.body); resp.StatusCode != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, resp.StatusCode, out, tc.status)
		}
	}
	var encrypted bool
	f.machine.Read(func(st *fsm.State) {
		ch, _ := st.Channel("#priv")
		encrypted = ch.Encrypted()
	})
	if !encrypted {
		t.Fatal("group keys left #priv without +E")
	}
	resp, body := f.do("GET", "/api/v1/channels/priv/groupkeys", "tok-bob", nil, nil)
	var got struct {
		Channel string               `json:"channel"`
		Keys    []fsmmedia.SealedKey `json:"keys"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil || got.Channel != "#priv" || len(got.Keys) != 2 ||
		got.Keys[0] != (fsmmedia.SealedKey{Epoch: 2, Sealed: "EGK1:b2"}) || got.Keys[1] != (fsmmedia.SealedKey{Epoch: 1, Sealed: "EGK1:b1"}) {
		t.Fatalf("bob's keys: %d %s", resp.StatusCode, body)
	}
	if _, body := f.do("GET", "/api/v1/channels/priv/groupkeys", "tok-alice", nil, nil); !strings.Contains(string(body), "EGK1:a1") || strings.Contains(string(body), "EGK1:b") {
		t.Fatalf("alice sees %s", body)
	}
	for _, tc := range []struct {
		token, channel string
		status         int
	}{{"tok-carol", "priv", 403}, {"", "priv", 401}, {"tok-bob", "nope", 404}} {
		if resp, _ := f.do("GET", "/api/v1/channels/"+tc.channel+"/groupkeys", tc.token, nil, nil); resp.StatusCode != tc.status {
			t.Errorf("read %s by %q: %d, want %d", tc.channel, tc.token, resp.StatusCode, tc.status)
		}
	}
}
