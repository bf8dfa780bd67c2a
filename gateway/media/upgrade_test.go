package media

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// fakeLevels is the cluster's feature level as a test sets it.
type fakeLevels struct{ level atomic.Int64 }

func (l *fakeLevels) ClusterLevel() int { return int(l.level.Load()) }

// lastRecord decodes the last RecordMedia entry proposed and returns it with its feature level.
func (f *fixture) lastRecord() (fsmmedia.RecordMedia, int) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.entries) - 1; i >= 0; i-- {
		cmd, _, _, err := fsm.Decode(f.entries[i])
		if err != nil {
			f.t.Fatal(err)
		}
		if rm, ok := cmd.(fsmmedia.RecordMedia); ok {
			return rm, fsm.EntryLevel(f.entries[i])
		}
	}
	f.t.Fatal("no RecordMedia proposed")
	return fsmmedia.RecordMedia{}, 0
}

// TestUploadDuringUpgrade: while a server of the cluster applies only level 0 (v0.1.0), an upload
// is taken, its copy made, and recorded in v0.1.0's shape (a level-0 entry naming the taking node
// alone, without the deployment's total), also when no other server takes a copy; the repair
// pass changes no holder set meanwhile. Once the cluster is at level 1 the pass records the copy
// made during the upgrade and makes the missing one, and uploads carry their holders and the
// total again.
func TestUploadDuringUpgrade(t *testing.T) {
	levels := &fakeLevels{}
	tc := newTestClusterConf(t, 2, func(c *Config) { c.Levels = levels }, "n1", "n2", "n3")
	tc.level = levels.ClusterLevel

	_, up := tc.uploadRandom(70_000)
	rec, level := tc.lastRecord()
	if level != 0 || rec.Total != 0 || rec.Object.Holders != nil || rec.Quota != tc.svc.opts.QuotaBytes {
		t.Fatalf("record during the upgrade: level %d, total %d, holders %v, quota %d", level, rec.Total, rec.Object.Holders, rec.Quota)
	}
	copies := tc.has(up.ID)
	if got := tc.holders(up.ID); !slices.Equal(got, []string{"n1"}) || len(copies) != 2 || copies[0] != "n1" {
		t.Fatalf("during the upgrade: holders %v, copies on %v", got, copies)
	}
	// The other servers take no copy (as a v0.1.0 server): the upload is taken all the same.
	tc.mesh.setDown("n2", true)
	tc.mesh.setDown("n3", true)
	_, alone := tc.uploadRandom(5000)
	if got, on := tc.holders(alone.ID), tc.has(alone.ID); !slices.Equal(got, []string{"n1"}) || !slices.Equal(on, got) {
		t.Fatalf("upload without copies during the upgrade: holders %v, copies on %v", got, on)
	}
	tc.mesh.setDown("n2", false)
	tc.mesh.setDown("n3", false)
	for name, svc := range tc.svcs {
		if pending, err := svc.Repair(context.Background()); err != nil || pending != 0 {
			t.Fatalf("repair on %s during the upgrade: %d %v", name, pending, err)
		}
	}
	if a, b := tc.holders(up.ID), tc.holders(alone.ID); !slices.Equal(a, []string{"n1"}) || !slices.Equal(b, []string{"n1"}) {
		t.Fatalf("holders after a repair during the upgrade: %v, %v", a, b)
	}

	levels.level.Store(1)
	// With n1 down, the copy made during the upgrade is recorded without being fetched again;
	// the upload without copies waits for n1.
	tc.mesh.setDown("n1", true)
	repairAll := func(wantPending int) {
		t.Helper()
		pending := 0
		for _, name := range []string{"n2", "n3"} {
			n, err := tc.svcs[name].Repair(context.Background())
			if err != nil {
				t.Fatalf("repair on %s after the upgrade: %v", name, err)
			}
			pending += n
		}
		if pending != wantPending {
			t.Fatalf("repair after the upgrade: %d copies pending, want %d", pending, wantPending)
		}
	}
	repairAll(1)
	if got := tc.holders(up.ID); !slices.Equal(got, copies) {
		t.Fatalf("holders after the upgrade: %v, copies on %v", got, copies)
	}
	tc.mesh.setDown("n1", false)
	repairAll(0)
	if got, on := tc.holders(alone.ID), tc.has(alone.ID); len(got) != 2 || !slices.Equal(on, got) {
		t.Fatalf("the upload without copies after the upgrade: holders %v, copies on %v", got, on)
	}

	_, up2 := tc.uploadRandom(1000)
	rec, level = tc.lastRecord()
	if level != 1 || rec.Total != tc.svc.opts.TotalBytes || len(rec.Object.Holders) != 2 ||
		!slices.Equal(tc.holders(up2.ID), tc.has(up2.ID)) {
		t.Fatalf("record after the upgrade: level %d, total %d, holders %v, copies on %v", level, rec.Total,
			rec.Object.Holders, tc.has(up2.ID))
	}
}
