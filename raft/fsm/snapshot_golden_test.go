package fsm_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	_ "github.com/palaver-chat/palaver/raft/fsm/features"
)

// TestSnapshotsGolden replays recorded command logs (seeded random logs of every command type,
// in testdata/snapshots) and compares the snapshots and results they produce with the hashes
// recorded when the logs were written: a change to how any part of the state encodes, or to
// what a command does, shows here. The logs and hashes were recorded once and must never be
// regenerated to make this test pass; a new command type gets new logs beside them.
func TestSnapshotsGolden(t *testing.T) {
	want := readGoldenHashes(t)
	if len(want) == 0 {
		t.Fatal("no golden hashes")
	}
	for name, h := range want {
		t.Run(name, func(t *testing.T) {
			log := readGoldenLog(t, filepath.Join("testdata", "snapshots", name+".log.gz"))
			m := fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			var results []string
			var fresh *fsm.Machine
			for i, e := range log {
				res, _ := json.Marshal(m.Apply(uint64(i+1), e))
				results = append(results, string(res))
				if fresh != nil {
					fresh.Apply(uint64(i+1), e)
				}
				if i+1 == 1500 {
					snap := snapshot(t, m)
					if got := sum(snap); got != h["mid"] {
						t.Errorf("snapshot after entry 1500: %s, want %s", got, h["mid"])
					}
					// A machine restored from the snapshot goes on as the original.
					fresh = fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
					if err := fresh.Restore(bytes.NewReader(snap)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := sum(snapshot(t, m)); got != h["end"] {
				t.Errorf("final snapshot: %s, want %s", got, h["end"])
			}
			if got := sum([]byte(strings.Join(results, "\n"))); got != h["results"] {
				t.Errorf("results: %s, want %s", got, h["results"])
			}
			if fresh.Hash() != m.Hash() {
				t.Error("a machine restored from the snapshot at entry 1500 ends in another state")
			}
		})
	}
}

func readGoldenHashes(t *testing.T) map[string]map[string]string {
	data, err := os.ReadFile(filepath.Join("testdata", "snapshots", "hashes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line) // name mid H end H results H
		if len(f) != 7 {
			t.Fatalf("hashes line %q", line)
		}
		out[f[0]] = map[string]string{f[1]: f[2], f[3]: f[4], f[5]: f[6]}
	}
	return out
}

// readGoldenLog reads a gzip stream of entries, each a uvarint length and the entry's bytes.
func readGoldenLog(t *testing.T, path string) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(zr)
	var out [][]byte
	for {
		n, err := binary.ReadUvarint(r)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		e := make([]byte, n)
		if _, err := io.ReadFull(r, e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func snapshot(t *testing.T, m *fsm.Machine) []byte {
	w, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
