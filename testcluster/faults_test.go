package testcluster

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseStateMetrics(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		index   uint64
		hash    []byte
		wantErr bool
	}{
		{"both", "# HELP x\npalaver_raft_applied_index 4944\npalaver_state_hash48 2.48104409316427e+14\n", 4944,
			[]byte{0xe1, 0xa6, 0x4f, 0x2f, 0x3c, 0x4b}, false},
		{"integer form", "palaver_state_hash48 255\npalaver_raft_applied_index 1\n", 1, []byte{0, 0, 0, 0, 0, 0xff}, false},
		{"other metrics ignored", "palaver_raft_applied_index_total 9\npalaver_raft_applied_index 2\npalaver_state_hash48 0\n", 2, make([]byte, 6), false},
		{"hash missing", "palaver_raft_applied_index 3\n", 0, nil, true},
		{"not a number", "palaver_raft_applied_index x\npalaver_state_hash48 1\n", 0, nil, true},
		{"negative", "palaver_raft_applied_index -1\npalaver_state_hash48 1\n", 0, nil, true},
		{"beyond 53 bits", "palaver_raft_applied_index 1e20\npalaver_state_hash48 1\n", 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := parseStateMetrics(strings.NewReader(tt.text))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if st.AppliedIndex != tt.index {
				t.Errorf("applied index = %d, want %d", st.AppliedIndex, tt.index)
			}
			if string(st.Hash[:6]) != string(tt.hash) {
				t.Errorf("hash = %x, want %x", st.Hash[:6], tt.hash)
			}
		})
	}
}

func FuzzParseStateMetrics(f *testing.F) {
	f.Add("palaver_raft_applied_index 4944\npalaver_state_hash48 2.48105037275787e+14\n")
	f.Add("palaver_state_hash48 NaN\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		st, err := parseStateMetrics(strings.NewReader(text))
		if err == nil && [26]byte(st.Hash[6:]) != [26]byte{} {
			t.Errorf("hash beyond 48 bits set: %x", st.Hash)
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
	}}
	want := "kill 2 (1 at the leader), partition 1 (1 at the leader), transfer 1 [1 failed to inject], slow-disk 1 (0 at the leader)"
	if got := rep.FaultCounts(); got != want {
		t.Errorf("FaultCounts() = %q\nwant            %q", got, want)
	}
}
