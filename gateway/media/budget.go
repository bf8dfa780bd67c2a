package media

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// Budgets beyond the per-DID quota, since a DID costs nothing to mint:
//
//   - per client address, the bytes uploaded through this node within an hour
//     (--media-address-bytes; 429 with Retry-After beyond);
//   - per deployment, the bytes of every upload recorded (--media-total-bytes, stamped into
//     RecordMedia so that every replica decides alike; 507 beyond);
//   - a free-disk floor: an upload that would leave less than --media-min-free-bytes free on the
//     media directory's file system is refused 507 before a byte is written (statfs).
//
// Uploads are deleted by their uploader or a server operator (DELETE /api/v1/media/{id}) and, with
// --media-retention, by their holders once that old; each holder drops the bytes of every object
// no record names (Sweep).

// addressWindow is the period of the per-address budget.
const addressWindow = time.Hour

// addressBudget counts the bytes each client address uploaded in its current window.
type addressBudget struct {
	limit int64 // 0: none
	mu    sync.Mutex
	used  map[string]*addressUse
}

type addressUse struct {
	start time.Time
	bytes int64
}

func newAddressBudget(limit int64) *addressBudget {
	return &addressBudget{limit: limit, used: map[string]*addressUse{}}
}

// take reserves n bytes for addr at now; false, with the wait until its window ends, when they
// would pass the limit.
func (b *addressBudget) take(addr string, n int64, now time.Time) (bool, time.Duration) {
	if b.limit <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.used) > 10000 {
		for a, u := range b.used {
			if now.Sub(u.start) >= addressWindow {
				delete(b.used, a)
			}
		}
	}
	u := b.used[addr]
	if u == nil || now.Sub(u.start) >= addressWindow {
		u = &addressUse{start: now}
		b.used[addr] = u
	}
	if u.bytes+n > b.limit {
		return false, addressWindow - now.Sub(u.start)
	}
	u.bytes += n
	return true, 0
}

// give returns n bytes reserved for addr (an upload that was refused after all).
func (b *addressBudget) give(addr string, n int64) {
	if b.limit <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if u := b.used[addr]; u != nil {
		u.bytes = max(u.bytes-n, 0)
	}
}

// freeBytes is the space available to this process on the file system of dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("media: statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// belowFloor reports whether storing n more bytes would leave less than the free-disk floor.
func (s *Service) belowFloor(n int64) bool {
	if s.opts.MinFreeBytes <= 0 {
		return false
	}
	free, err := s.freeBytes(s.store.dir)
	if err != nil {
		s.log.Warn("media: free disk space unknown", "err", err)
		return false
	}
	return free-bytesOnDisk(n) < s.opts.MinFreeBytes
}

// deleteUpload runs DELETE /api/v1/media/{id}: the uploader or a server operator deletes it.
func (s *Service) deleteUpload(c *gin.Context) {
	did := rest.DID(c)
	id := c.Param("id")
	if !validID(id) {
		rest.WriteError(c, http.StatusNotFound, "No such upload")
		return
	}
	oper := false
	for _, d := range s.cfg.OperDIDs {
		oper = oper || d == did
	}
	res, ok := s.propose(c, fsmmedia.DeleteMedia{ID: id, DID: did, ServerOper: oper})
	if !ok {
		return
	}
	switch res.Code {
	case fsm.OK:
		s.dropIfHeld(id, false, nil)
		c.Status(http.StatusNoContent)
	case fsmmedia.ErrMediaNotFound:
		rest.WriteError(c, http.StatusNotFound, "No such upload")
	case fsmmedia.ErrMediaNotYours:
		rest.WriteError(c, http.StatusForbidden, "Only the uploader or a server operator may delete an upload")
	default:
		rest.WriteError(c, http.StatusBadRequest, "Refused: "+res.Code.String())
	}
}

// dropIfHeld removes an object's bytes from this node's disk when it holds them and no record
// names it any more, or (sweep) the record does not name this node among its holders while
// enough of servers hold it: a copy left behind by a node dropped from the holder set while away.
func (s *Service) dropIfHeld(id string, sweep bool, servers []string) {
	var obj fsmmedia.MediaObject
	var recorded bool
	s.cfg.State.Read(func(st *fsm.State) { obj, recorded = fsmmedia.Of(st).Object(id) })
	if !recorded || (sweep && !s.store.shared && !obj.HeldBy(s.cfg.Node) && s.fullyHeld(obj, servers)) {
		s.store.remove(id)
	}
}

// orphanAge is how old a file without a record must be before Sweep removes it: an upload is
// committed to disk before its record is applied.
const orphanAge = 10 * time.Minute

// Sweep runs one pass of the holder's upkeep: it proposes the deletion of this node's uploads
// older than the retention (when one is set) and removes the bytes of objects no record names
// (or that enough other servers hold).
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	if r := s.opts.Retention; r > 0 {
		var expired []fsmmedia.MediaObject
		cutoff := now.Add(-r).UnixMilli()
		all := s.store.shared && s.keepsSharedStore()
		s.cfg.State.Read(func(st *fsm.State) {
			objects := fsmmedia.Of(st).ObjectsHeldBy(s.cfg.Node)
			if all {
				objects = fsmmedia.Of(st).Objects()
			}
			for _, o := range objects {
				if o.At < cutoff {
					expired = append(expired, o)
				}
			}
		})
		for _, o := range expired {
			// With a shared store the node that keeps it expires every upload, in the name of
			// the node that took it.
			holder := s.cfg.Node
			if !o.HeldBy(holder) {
				holder = o.Holder
			}
			if _, err := s.cfg.Proposer.Propose(ctx, fsmmedia.DeleteMedia{ID: o.ID, Expired: true, Holder: holder}); err != nil {
				return fmt.Errorf("media retention: %w", err)
			}
		}
	}
	if s.store.shared && !s.keepsSharedStore() {
		return nil
	}
	var old []string
	err := s.store.blobs.list(func(id string, _ int64, changed time.Time) {
		if now.Sub(changed) >= orphanAge {
			old = append(old, id)
		}
	})
	if err != nil {
		return fmt.Errorf("media sweep: %w", err)
	}
	servers := s.servers()
	for _, id := range old {
		s.dropIfHeld(id, true, servers)
	}
	return nil
}

// keepsSharedStore reports whether this node sweeps the shared object store: the first server of
// the configuration in name order (or a single node).
func (s *Service) keepsSharedStore() bool {
	servers := s.servers()
	return len(servers) == 0 || servers[0] == s.cfg.Node
}

// Run sweeps every minute and runs the repair pass (replicas.go) at start, after every Kick,
// every repairEvery, and again after retryRepair while a pass leaves work undone, until ctx ends.
func (s *Service) Run(ctx context.Context) {
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	repair := time.NewTimer(0)
	defer repair.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			if err := s.Sweep(ctx); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("media sweep", "err", err)
			}
			continue
		case <-s.kick:
		case <-repair.C:
		}
		next := repairEvery
		pending, err := s.Repair(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("media repair", "err", err)
		}
		if err != nil || pending > 0 {
			next = retryRepair
		}
		repair.Reset(next)
	}
}
