package eventstore

import (
	"slices"
	"sync"
)

// recentSeqs keeps, per origin, the seqs of the rows the intake log acknowledged since the store
// opened (the newest recentSeqsPerOrigin of each), so that OriginSeqs answers a recent range from
// memory: the exchange's streams ask it for every frame, and a read transaction of its own cost
// more than the rest of the frame's read (the B15 profiles). An acknowledged row is durable, so it
// is listed before the writer has applied it.
//
// The intake log gives seqs in order and never reuses one, so each origin's list is sorted. It
// is complete above its floor: the greatest seq stored when the store opened, or the greatest one
// it let go of since.
type recentSeqs struct {
	mu     sync.Mutex
	opened int64 // the greatest seq stored at Open: rows at or below it are not listed
	by     map[string]*originSeqs
}

type originSeqs struct {
	floor int64   // every seq of the origin above floor is in seqs
	seqs  []int64 // ascending
}

// recentSeqsPerOrigin bounds each origin's list, between one and two times it (64 KiB at most; a
// stream reads at most a frame of 500 rows past its last). A variable for tests.
var recentSeqsPerOrigin = 4096

func newRecentSeqs(opened int64) *recentSeqs {
	return &recentSeqs{opened: opened, by: map[string]*originSeqs{}}
}

// committed records the rows the intake log acknowledged (their seqs are final then: the writer
// stores each under it); msgs with jseq 0 were not stored.
func (r *recentSeqs) committed(reqs []*writeRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range reqs {
		for i := range req.msgs {
			m := &req.msgs[i]
			if m.jseq == 0 {
				continue
			}
			o := r.by[m.Origin]
			if o == nil {
				o = &originSeqs{floor: r.opened}
				r.by[m.Origin] = o
			}
			o.seqs = append(o.seqs, m.jseq)
			if len(o.seqs) >= 2*recentSeqsPerOrigin {
				drop := len(o.seqs) - recentSeqsPerOrigin
				o.floor = o.seqs[drop-1]
				o.seqs = append(o.seqs[:0], o.seqs[drop:]...)
			}
		}
	}
}

// between lists origin's seqs in (after, through], at most limit of them, when memory holds the
// whole range (ok false: read the index).
func (r *recentSeqs) between(origin string, after, through int64, limit int) (seqs []int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.by[origin]
	floor := r.opened
	if o != nil {
		floor = o.floor
	}
	if after < floor {
		return nil, false
	}
	if o == nil || through <= after {
		return []int64{}, true
	}
	i, _ := slices.BinarySearch(o.seqs, after+1)
	j, found := slices.BinarySearch(o.seqs, through)
	if found {
		j++
	}
	j = min(j, i+limit)
	return append([]int64{}, o.seqs[i:max(i, j)]...), true
}
