package testcluster

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
)

func TestParseReplicaState(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name         string
		text         string
		applied, idx uint64
		wantErr      bool
	}{
		{"answer", `{"applied_index":4944,"state_index":4940,"hash":"` + hash + `"}`, 4944, 4940, false},
		{"hash missing", `{"applied_index":3,"state_index":3}`, 0, 0, true},
		{"short hash", `{"applied_index":3,"state_index":3,"hash":"abab"}`, 0, 0, true},
		{"hash too long", `{"applied_index":3,"state_index":3,"hash":"` + hash + `ab"}`, 0, 0, true},
		{"not hex", `{"applied_index":3,"state_index":3,"hash":"` + strings.Repeat("zz", 32) + `"}`, 0, 0, true},
		{"negative index", `{"applied_index":-1,"state_index":3,"hash":"` + hash + `"}`, 0, 0, true},
		{"unknown field", `{"applied_index":1,"state_index":1,"hash":"` + hash + `","extra":1}`, 0, 0, true},
		{"not JSON", "palaver_raft_applied_index 4944\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseReplicaState(strings.NewReader(tt.text))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if st.AppliedIndex != tt.applied || st.StateIndex != tt.idx || st.Hash[0] != 0xab || st.Hash[31] != 0xab {
				t.Errorf("state = %+v, want indexes %d/%d and hash %s", st, tt.applied, tt.idx, hash)
			}
		})
	}
}

func FuzzParseReplicaState(f *testing.F) {
	f.Add(`{"applied_index":4944,"state_index":4940,"hash":"` + strings.Repeat("0f", 32) + `"}`)
	f.Add(`{"hash":"zz"}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := parseReplicaState(strings.NewReader(text))
		if err != nil {
			return
		}
		again, err := json.Marshal(node.ReplicaState{AppliedIndex: st.AppliedIndex, StateIndex: st.StateIndex, Hash: hex.EncodeToString(st.Hash[:])})
		if err != nil {
			t.Fatal(err)
		}
		if back, err := parseReplicaState(bytes.NewReader(again)); err != nil || back != st {
			t.Errorf("%q read as %+v, which reads back as %+v, %v", text, st, back, err)
		}
	})
}

func TestParseFaultKinds(t *testing.T) {
	tests := []struct {
		list    string
		want    []FaultKind
		wantErr bool
	}{
		{"all", AllFaults, false},
		{"kill", []FaultKind{FaultKill}, false},
		{"partition, slow-disk", []FaultKind{FaultPartition, FaultSlowDisk}, false},
		{"upgrade", []FaultKind{FaultUpgrade}, false},
		{"kill,upgrade", []FaultKind{FaultKill, FaultUpgrade}, false},
		{"kill,meteor", nil, true},
		{"", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseFaultKinds(tt.list)
		if (err != nil) != tt.wantErr || strings.Join(kindNames(got), ",") != strings.Join(kindNames(tt.want), ",") {
			t.Errorf("ParseFaultKinds(%q) = %v, %v; want %v (error %v)", tt.list, got, err, tt.want, tt.wantErr)
		}
	}
}

func kindNames(kinds []FaultKind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

func TestFaultCounts(t *testing.T) {
	rep := &Report{Events: []NemesisEvent{
		{Kind: "kill", Fault: FaultKill, Leader: true}, {Kind: "restart", Fault: FaultKill},
		{Kind: "kill", Fault: FaultKill}, {Kind: "restart", Fault: FaultKill},
		{Kind: "partition", Fault: FaultPartition, Leader: true}, {Kind: "heal", Fault: FaultPartition},
		{Kind: "transfer", Fault: FaultTransfer, Leader: true, Err: errors.New("no leader")},
		{Kind: "slow-disk", Fault: FaultSlowDisk, Took: time.Second}, {Kind: "disk-ok", Fault: FaultSlowDisk},
		{Kind: "upgrade", Fault: FaultUpgrade, Leader: true}, {Kind: "restart", Fault: FaultUpgrade},
		{Kind: "upgrade", Fault: FaultUpgrade}, {Kind: "restart", Fault: FaultUpgrade, Err: errors.New("exited")},
	}}
	want := "kill 2 (1 at the leader), partition 1 (1 at the leader), transfer 1 [1 failed to inject], slow-disk 1 (0 at the leader), upgrade 2 (1 at the leader)"
	if got := rep.FaultCounts(); got != want {
		t.Errorf("FaultCounts() = %q\nwant            %q", got, want)
	}
}
