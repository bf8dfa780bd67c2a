package media

import (
	"slices"
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Which nodes hold an upload's bytes. An upload is recorded with the nodes it was copied to
// before it was answered (RecordMedia's Object.Holders); a node that copies it later adds itself
// (AddMediaHolder); a node removed from the cluster is dropped from every holder set
// (DropMediaHolder), except where it is the last holder: the bytes may come back with it. A
// record whose only holder is the node that took it keeps Holders nil, so the state of a single
// node encodes as before holder sets existed.

// Command types of this file (persisted; never renumber or reuse).
const (
	TypeAddMediaHolder  fsm.CommandType = 46
	TypeDropMediaHolder fsm.CommandType = 47
)

// MaxMediaHolders bounds an upload's holder set; MaxNodeName a holder's name.
const (
	MaxMediaHolders = 16
	MaxNodeName     = 255
)

// AddMediaHolder records that Node holds a copy of upload ID (NoChange when it is recorded
// already; ErrMediaNotFound for an unknown upload; ErrMediaFull past MaxMediaHolders).
type AddMediaHolder struct {
	ID   string `json:"id"`
	Node string `json:"node"`
}

// DropMediaHolder removes Node from the holder set of every upload it holds with others; the
// result's Count is the uploads changed.
type DropMediaHolder struct {
	Node string `json:"node"`
}

func (AddMediaHolder) CommandType() fsm.CommandType  { return TypeAddMediaHolder }
func (DropMediaHolder) CommandType() fsm.CommandType { return TypeDropMediaHolder }

// HolderSet lists the nodes that hold the upload's bytes, sorted.
func (o MediaObject) HolderSet() []string {
	if len(o.Holders) == 0 {
		return []string{o.Holder}
	}
	return slices.Clone(o.Holders)
}

// HeldBy reports whether node holds a copy of the upload.
func (o MediaObject) HeldBy(node string) bool {
	if len(o.Holders) == 0 {
		return o.Holder == node
	}
	_, found := slices.BinarySearch(o.Holders, node)
	return found
}

// normalHolders checks a proposed holder set and returns it sorted, or nil when it names only
// the node that took the upload (or nothing).
func normalHolders(holder string, holders []string) ([]string, bool) {
	if len(holders) == 0 {
		return nil, true
	}
	if len(holders) > MaxMediaHolders {
		return nil, false
	}
	out := slices.Clone(holders)
	sort.Strings(out)
	for i, h := range out {
		if h == "" || len(h) > MaxNodeName || (i > 0 && out[i-1] == h) {
			return nil, false
		}
	}
	return compactHolders(holder, out), true
}

// compactHolders is nil for a sorted set that is exactly {holder}.
func compactHolders(holder string, sorted []string) []string {
	if len(sorted) == 1 && sorted[0] == holder {
		return nil
	}
	return sorted
}

func (a *tx) addMediaHolder(c AddMediaHolder) fsm.Result {
	if c.ID == "" || len(c.ID) > MaxMediaIDLen || c.Node == "" || len(c.Node) > MaxNodeName {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if section.Of(a.State()) == nil || section.Of(a.State()).Objects[c.ID] == nil {
		return fsm.Result{Code: ErrMediaNotFound}
	}
	o := section.Of(a.State()).Objects[c.ID]
	if o.HeldBy(c.Node) {
		return fsm.Result{Code: fsm.NoChange}
	}
	set := o.HolderSet()
	if len(set) >= MaxMediaHolders {
		return fsm.Result{Code: ErrMediaFull}
	}
	set = append(set, c.Node)
	sort.Strings(set)
	o.Holders = compactHolders(o.Holder, set)
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) dropMediaHolder(c DropMediaHolder) fsm.Result {
	if c.Node == "" || len(c.Node) > MaxNodeName {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if section.Of(a.State()) == nil {
		return fsm.Result{Code: fsm.NoChange}
	}
	changed := 0
	for _, o := range section.Of(a.State()).Objects {
		set := o.HolderSet()
		i, found := slices.BinarySearch(set, c.Node)
		if !found || len(set) == 1 {
			continue
		}
		o.Holders = compactHolders(o.Holder, slices.Delete(set, i, i+1))
		changed++
	}
	if changed == 0 {
		return fsm.Result{Code: fsm.NoChange}
	}
	return fsm.Result{Code: fsm.OK, Count: changed}
}
