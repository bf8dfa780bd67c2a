package media

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// Copies of uploads on more than one node.
//
// An upload is sealed on the node that took it, then its plaintext is sent over the cluster
// plane (PUT /internal/v1/media/{id}) to Options.Replicas-1 other servers of the Raft
// configuration, each of which seals it under its own master key; only then is it recorded
// (fsmmedia.RecordMedia, Object.Holders naming every copy) and answered. The targets are the servers
// ranked first for the id (rendezvous hashing), the next ones taking the place of any that fails.
// A download on a node without a copy streams it from a holder, the next holder being asked when
// one is down. The repair pass (Repair) restores the count after a server leaves the
// configuration: the first server in name order drops departed nodes from the holder sets
// (fsmmedia.DropMediaHolder); for each upload held by fewer servers than wanted, the servers ranked
// first among those up and without a copy fetch one from a holder and record themselves
// (fsmmedia.AddMediaHolder); a holder whose copy is missing from its disk fetches it again.
//
// During a rolling upgrade from v0.1.0 (the cluster's feature level below 1, Config.Levels) the
// record takes v0.1.0's shape, which every server applies alike: the node that took the upload
// as its only holder and no deployment total (the proposer still checks that total against the
// state before taking the upload). The copies are attempted all the same, but an upload short of
// them is taken (a v0.1.0 server takes no copy); the repair pass, which proposes no holder change
// before the cluster reaches level 1, makes and records them then: the server chosen for a copy
// that has one already records itself without fetching it again.

// retryRepair is the wait before a repair pass that left work undone is run again; repairEvery
// the wait between passes otherwise (a membership change runs one at once).
const (
	retryRepair = 5 * time.Second
	repairEvery = time.Minute
)

// rank orders nodes for an upload id: highest random weight first, the same on every node.
func rank(id string, nodes []string) []string {
	weight := func(n string) string {
		h := sha256.Sum256([]byte(id + "\x00" + n))
		return string(h[:])
	}
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b string) int {
		wa, wb := weight(a), weight(b)
		switch {
		case wa < wb:
			return -1
		case wa > wb:
			return 1
		}
		return 0
	})
	return out
}

// servers lists the servers of the Raft configuration, sorted; nil on a single node.
func (s *Service) servers() []string {
	if s.cfg.Holders == nil {
		return nil
	}
	out := s.cfg.Holders.Servers()
	slices.Sort(out)
	return out
}

// want is the number of copies an upload should have among servers.
func (s *Service) want(servers []string) int {
	return max(min(s.opts.Replicas, len(servers)), 1)
}

// replicate sends object id (size plaintext bytes, sealed here already) to as many other servers
// as the replica count asks and returns the full holder set, this node included; short of that,
// it returns the holders it made with the error.
func (s *Service) replicate(ctx context.Context, id string, size int64) ([]string, error) {
	servers := s.servers()
	holders := []string{s.cfg.Node}
	need := s.want(servers) - 1
	if need <= 0 || s.store.shared { // an object store keeps its own copies
		return holders, nil
	}
	var errs []error
	var err error
	for _, node := range rank(id, servers) {
		if len(holders) > need {
			break
		}
		if node == s.cfg.Node {
			continue
		}
		if err := s.sendCopy(ctx, node, id, size); err != nil {
			s.metrics.copies.WithLabelValues("upload", "error").Inc()
			errs = append(errs, err)
			continue
		}
		s.metrics.copies.WithLabelValues("upload", "ok").Inc()
		holders = append(holders, node)
	}
	if len(holders) <= need {
		err = fmt.Errorf("media: %d of %d copies made: %w", len(holders), need+1, errors.Join(errs...))
	}
	slices.Sort(holders)
	return holders, err
}

// recordCommand is the record of an upload: the full holder set and the deployment's total, or,
// while a server of the cluster applies only a lower feature level than that record needs, the
// shape of v0.1.0 (the taking node alone, no total), which every server applies alike.
func (s *Service) recordCommand(obj fsmmedia.MediaObject) fsmmedia.RecordMedia {
	cmd := fsmmedia.RecordMedia{Object: obj, Quota: s.opts.QuotaBytes, Total: s.opts.TotalBytes}
	if fsm.CommandLevel(cmd) > s.clusterLevel() {
		cmd.Object.Holders, cmd.Total = nil, 0
	}
	return cmd
}

// holderChangesAllowed reports whether every server of the cluster applies the holder-set
// commands (AddMediaHolder, DropMediaHolder).
func (s *Service) holderChangesAllowed() bool {
	return s.clusterLevel() >= fsm.CommandLevel(fsmmedia.AddMediaHolder{})
}

// sendCopy streams this node's plaintext of id to node.
func (s *Service) sendCopy(ctx context.Context, node, id string, size int64) error {
	r, err := s.store.open(id)
	if err != nil {
		return fmt.Errorf("media copy of %s: %w", id, err)
	}
	defer r.Close()
	if err := s.cfg.Holders.StoreCopy(ctx, node, id, size, r); err != nil {
		return fmt.Errorf("media copy of %s to %s: %w", id, node, err)
	}
	return nil
}

// receiveCopy answers PUT /internal/v1/media/{id}: another server's copy of an upload, sealed
// here under this node's key. An upload is copied before it is recorded, so the record is not
// asked for; a copy no record names is removed by the sweep (orphanAge).
func (s *Service) receiveCopy(c *gin.Context) {
	id := c.Param("id")
	size := c.Request.ContentLength
	switch {
	case !validID(id):
		c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": "bad object id"})
		return
	case size < 0 || size > MaxUploadBytes:
		c.AbortWithStatusJSON(http.StatusRequestEntityTooLarge,
			gin.H{"error": "a copy needs a Content-Length of at most " + strconv.Itoa(MaxUploadBytes)})
		return
	}
	switch held, err := s.store.blobs.has(id); {
	case err != nil:
		s.log.Warn("media: storing a copy", "id", id, "err", err)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "media storage unreadable"})
		return
	case held:
		c.Status(http.StatusNoContent)
		return
	}
	if s.store.full(size) || s.belowFloor(size) {
		c.AbortWithStatusJSON(http.StatusInsufficientStorage, gin.H{"error": "media storage full"})
		return
	}
	if err := s.storeCopy(id, size, http.MaxBytesReader(c.Writer, c.Request.Body, size)); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, errDiskFull) {
			status = http.StatusInsufficientStorage
		} else if errors.Is(err, errShortCopy) {
			status = http.StatusBadRequest
		}
		s.log.Warn("media: storing a copy", "id", id, "err", err)
		s.metrics.copies.WithLabelValues("received", "error").Inc()
		c.AbortWithStatusJSON(status, gin.H{"error": err.Error()})
		return
	}
	s.metrics.copies.WithLabelValues("received", "ok").Inc()
	c.Status(http.StatusNoContent)
}

var errShortCopy = errors.New("media: the copy's length differs from its size")

// storeCopy seals exactly size bytes of body as object id.
func (s *Service) storeCopy(id string, size int64, body io.Reader) error {
	w, err := s.store.create(id)
	if err != nil {
		return err
	}
	defer w.abort()
	n, err := io.Copy(w, io.LimitReader(body, size+1))
	if err != nil {
		return fmt.Errorf("media copy of %s: %w", id, err)
	}
	if n != size {
		return fmt.Errorf("%w: %d bytes, want %d", errShortCopy, n, size)
	}
	return w.commit()
}

// fetchCopy takes a copy of obj from one of holders (other than this node) into this node's store.
func (s *Service) fetchCopy(ctx context.Context, obj fsmmedia.MediaObject, holders []string) error {
	var errs []error
	for _, node := range rank(obj.ID, holders) {
		if node == s.cfg.Node {
			continue
		}
		err := func() error {
			resp, err := s.cfg.Holders.FetchHeld(ctx, node, obj.ID, "")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s answered %d", node, resp.StatusCode)
			}
			return s.storeCopy(obj.ID, obj.Size, resp.Body)
		}()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return errors.New("no other holder")
	}
	return errors.Join(errs...)
}

// Repair runs one repair pass (see the top of this file) and returns how many copies this node
// should have taken and could not; Run runs it again soon when that is not zero.
func (s *Service) Repair(ctx context.Context) (int, error) {
	servers := s.servers()
	if len(servers) == 0 || s.store.shared {
		return 0, nil
	}
	want := s.want(servers)
	isServer := func(n string) bool { _, ok := slices.BinarySearch(servers, n); return ok }
	var objects []fsmmedia.MediaObject
	s.cfg.State.Read(func(st *fsm.State) { objects = fsmmedia.Of(st).Objects() })
	// Before the last server of an upgrade runs this version no holder change can be recorded;
	// copies made meanwhile are recorded by the first pass after it (repairEvery).
	changes := s.holderChangesAllowed()
	if changes && servers[0] == s.cfg.Node {
		departed := map[string]bool{}
		for _, o := range objects {
			for _, h := range o.HolderSet() {
				if !isServer(h) {
					departed[h] = true
				}
			}
		}
		for _, node := range slices.Sorted(maps.Keys(departed)) {
			if _, err := s.cfg.Proposer.Propose(ctx, fsmmedia.DropMediaHolder{Node: node}); err != nil {
				return 0, fmt.Errorf("media repair: dropping %s: %w", node, err)
			}
			s.log.Info("media repair: a removed node dropped from the holder sets", "node", node)
		}
	}
	up := map[string]bool{s.cfg.Node: true}
	for _, n := range servers {
		up[n] = up[n] || s.cfg.Holders.Alive(n)
	}
	pending := 0
	for _, o := range objects {
		if ctx.Err() != nil {
			return pending, ctx.Err()
		}
		live := slices.DeleteFunc(o.HolderSet(), func(h string) bool { return !isServer(h) })
		switch {
		case o.HeldBy(s.cfg.Node):
			if s.store.has(o.ID) {
				continue
			}
			// This node lost its copy (a replaced disk): take it again.
			if err := s.fetchCopy(ctx, o, live); err != nil {
				s.log.Warn("media repair: restoring this node's copy", "id", o.ID, "err", err)
				s.metrics.copies.WithLabelValues("repair", "error").Inc()
				pending++
				continue
			}
			s.metrics.copies.WithLabelValues("repair", "ok").Inc()
		case len(live) < want && changes:
			// Servers without a copy that are up, so that a server down but not yet removed
			// does not hold the repair up; two nodes that see liveness differently for a moment
			// may both take a copy, which is one copy too many, not one too few.
			others := slices.DeleteFunc(slices.Clone(servers), func(n string) bool {
				return o.HeldBy(n) || !up[n]
			})
			chosen := rank(o.ID, others)[:min(want-len(live), len(others))]
			if !slices.Contains(chosen, s.cfg.Node) {
				continue
			}
			// A copy sent while the record could not name it (a rolling upgrade) is kept.
			if held, err := s.store.blobs.has(o.ID); err != nil || !held {
				if err := s.fetchCopy(ctx, o, live); err != nil {
					s.log.Warn("media repair: copying an upload", "id", o.ID, "err", err)
					s.metrics.copies.WithLabelValues("repair", "error").Inc()
					pending++
					continue
				}
			}
			if _, err := s.cfg.Proposer.Propose(ctx, fsmmedia.AddMediaHolder{ID: o.ID, Node: s.cfg.Node}); err != nil {
				pending++
				s.log.Warn("media repair: recording a copy", "id", o.ID, "err", err)
				continue
			}
			s.metrics.copies.WithLabelValues("repair", "ok").Inc()
		}
	}
	s.countUnderCopied(servers, want)
	return pending, nil
}

// fullyHeld reports whether as many of servers (the configuration's, sorted) as wanted hold obj
// (false on a single node, where no other server could).
func (s *Service) fullyHeld(obj fsmmedia.MediaObject, servers []string) bool {
	if len(servers) == 0 {
		return false
	}
	return liveHolders(obj, servers) >= s.want(servers)
}

// liveHolders counts the holders of obj among servers (sorted).
func liveHolders(obj fsmmedia.MediaObject, servers []string) int {
	n := 0
	for _, h := range obj.HolderSet() {
		if _, ok := slices.BinarySearch(servers, h); ok {
			n++
		}
	}
	return n
}

// countUnderCopied sets the gauge of uploads held by fewer servers than wanted.
func (s *Service) countUnderCopied(servers []string, want int) {
	under := 0
	s.cfg.State.Read(func(st *fsm.State) {
		for _, o := range fsmmedia.Of(st).Objects() {
			if liveHolders(o, servers) < want {
				under++
			}
		}
	})
	s.metrics.underCopied.Set(float64(under))
}

// Kick has the next repair pass run at once (a membership change).
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
