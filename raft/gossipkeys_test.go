package raft

import (
	"bytes"
	"testing"

	"github.com/hashicorp/memberlist"
)

// TestGossipKeyChoice: a node encrypts with the newest key every live member holds, keeps its
// key while alone, and cycles through its keys after joins that reached no one.
func TestGossipKeyChoice(t *testing.T) {
	newKey, oldKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	fpNew, fpOld := keyFingerprint(newKey), keyFingerprint(oldKey)
	tests := []struct {
		name    string
		members [][]string // keys held by each live member
		dead    [][]string // keys held by dead members (ignored)
		want    []byte
	}{
		{"alone keeps the oldest", nil, nil, oldKey},
		{"a member with the old key only", [][]string{{fpOld}, {fpNew, fpOld}}, nil, oldKey},
		{"every member holds both", [][]string{{fpNew, fpOld}, {fpNew, fpOld}}, nil, newKey},
		{"retired members hold the new key only", [][]string{{fpNew}, {fpNew, fpOld}}, nil, newKey},
		{"a dead member does not hold the cluster back", [][]string{{fpNew, fpOld}}, [][]string{{fpOld}}, newKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := keyedGossip(t, newKey, oldKey)
			for i, keys := range tt.members {
				g.members[string(rune('a'+i))] = &memberRecord{name: string(rune('a' + i)), alive: true, meta: nodeMeta{Keys: keys}}
			}
			for i, keys := range tt.dead {
				g.members[string(rune('x'+i))] = &memberRecord{name: string(rune('x' + i)), meta: nodeMeta{Keys: keys}}
			}
			g.chooseKey()
			if got := g.keyring.GetPrimaryKey(); !bytes.Equal(got, tt.want) {
				t.Fatalf("primary key %x, want %x", got[:1], tt.want[:1])
			}
		})
	}
	g := keyedGossip(t, newKey, oldKey)
	for _, want := range [][]byte{newKey, oldKey, newKey} {
		g.nextKey()
		if got := g.keyring.GetPrimaryKey(); !bytes.Equal(got, want) {
			t.Fatalf("nextKey moved to %x, want %x", got[:1], want[:1])
		}
		g.chooseKey() // alone: no change
		if got := g.keyring.GetPrimaryKey(); !bytes.Equal(got, want) {
			t.Fatalf("chooseKey while alone moved to %x", got[:1])
		}
	}
}

func keyedGossip(t *testing.T, keys ...[]byte) *gossip {
	t.Helper()
	keyring, err := memberlist.NewKeyring(keys, keys[len(keys)-1])
	if err != nil {
		t.Fatal(err)
	}
	g := &gossip{self: "self", logger: testLogger(), keys: keys, keyring: keyring, members: map[string]*memberRecord{}}
	for _, k := range keys {
		g.fingerprints = append(g.fingerprints, keyFingerprint(k))
	}
	return g
}
