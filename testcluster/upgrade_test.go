package testcluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInspectDataDir(t *testing.T) {
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		files   map[string]string
		want    DataOnDisk
		wantErr bool
	}{
		{"log and store, no snapshot", map[string]string{"raft/raft-log.db": "1234", "events.db": "12"},
			DataOnDisk{LogBytes: 4, EventBytes: 2}, false},
		{"the newest of two snapshots", map[string]string{
			"raft/snapshots/2-128-1/meta.json": `{"Index":128,"Term":2}`,
			"raft/snapshots/3-300-2/meta.json": `{"Index":300,"Term":3}`,
			"raft/raft-log.db":                 "1", "events.db": "1"},
			DataOnDisk{SnapshotIndex: 300, Snapshots: 2, LogBytes: 1, EventBytes: 1}, false},
		{"no message store", map[string]string{"raft/raft-log.db": "1"}, DataOnDisk{}, true},
		{"unreadable snapshot meta", map[string]string{"raft/snapshots/x/meta.json": "{", "raft/raft-log.db": "1", "events.db": "1"}, DataOnDisk{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				write(t, filepath.Join(dir, name), data)
			}
			got, err := inspectDataDir(dir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
