package exchange

import (
	"context"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// outWindow holds the binary form (appendEvent) of this node's latest rows as the streams read
// them from the durable log: the streams of every peer near the head of the log take a row from
// here, so it is read and encoded once for all of them rather than once per peer. It covers an
// exact range: every row of this origin with lo < seq <= hi, in seq order, and nothing else. A
// stream behind the window reads the log itself and leaves the window alone, so a lagging peer
// never evicts the rows the others are about to send.
//
// The rows themselves mostly come from memory: Publish hands the window every row this node
// stored (remember), and a read of the log's seqs alone (the covering index, no row read) proves
// that the published rows are all the range holds; a range with a row not published (the stored
// stream dropped it, or it was stored before this process started) is read from the log.
type outWindow struct {
	mu     sync.Mutex
	lo, hi int64
	seqs   []int64
	encs   [][]byte

	pubMu     sync.Mutex
	published [publishedRows]*eventstore.Message // by seq modulo publishedRows
}

// publishedRows is how many of the latest published rows the window remembers.
const publishedRows = 8192

// seqLister reads the seqs of an origin's rows in a range (eventstore.Store.OriginSeqs).
type seqLister interface {
	OriginSeqs(ctx context.Context, origin string, afterSeq, through int64, limit int) ([]int64, error)
}

// remember keeps a row this node stored, for the streams to send without reading it back. A row
// with a tag that is not valid UTF-8 is not kept: the log stores its tags as JSON, which would
// send them changed, so the streams read that row back from the log.
func (w *outWindow) remember(m eventstore.Message) {
	for k, v := range m.Tags {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return
		}
	}
	w.pubMu.Lock()
	w.published[uint64(m.Seq)%publishedRows] = &m
	w.pubMu.Unlock()
}

// fromPublished returns origin's rows with after < seq <= through (at most limit) from the
// remembered ones, or false when the log holds a row in that range that is not remembered.
func (w *outWindow) fromPublished(ctx context.Context, lister seqLister, origin string, after, through int64, limit int) ([]eventstore.Message, bool, error) {
	seqs, err := lister.OriginSeqs(ctx, origin, after, through, limit)
	if err != nil {
		return nil, false, err
	}
	rows := make([]eventstore.Message, len(seqs))
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	for i, seq := range seqs {
		m := w.published[uint64(seq)%publishedRows]
		if m == nil || m.Seq != seq {
			return nil, false, nil
		}
		rows[i] = *m
	}
	return rows, true, nil
}

// windowRows bounds the rows the window keeps (about 1.5 MB of encoded events at 400 bytes).
const windowRows = 4096

// loadFunc reads the origin's rows with after < seq <= through, at most limit of them, in seq
// order (Store.OriginThrough).
type loadFunc func(ctx context.Context, after, through int64, limit int) ([]eventstore.Message, error)

// read returns the encoded rows with pos < seq <= through, at most limit of them, and the seq of
// the last one (pos when there is none). Every row through `through` must be durable.
func (w *outWindow) read(ctx context.Context, pos, through int64, limit int, load loadFunc) ([][]byte, int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pos < w.lo { // behind the window: read the log for this stream alone
		rows, err := load(ctx, pos, through, limit)
		if err != nil {
			return nil, pos, err
		}
		encs := make([][]byte, len(rows))
		last := pos
		for i := range rows {
			encs[i] = encodeRow(rows[i])
			last = rows[i].Seq
		}
		return encs, last, nil
	}
	if pos > w.hi { // ahead of the window: start it again from pos
		w.lo, w.hi, w.seqs, w.encs = pos, pos, w.seqs[:0], w.encs[:0]
	}
	from := sort.Search(len(w.seqs), func(i int) bool { return w.seqs[i] > pos })
	if w.hi < through && len(w.seqs)-from < limit {
		rows, err := load(ctx, w.hi, through, limit)
		if err != nil {
			return nil, pos, err
		}
		for i := range rows {
			w.seqs = append(w.seqs, rows[i].Seq)
			w.encs = append(w.encs, encodeRow(rows[i]))
		}
		if len(rows) == limit {
			w.hi = rows[len(rows)-1].Seq // the page may stop short of through
		} else {
			w.hi = through
		}
	}
	to := from
	for to < len(w.seqs) && to-from < limit && w.seqs[to] <= through {
		to++
	}
	out := append([][]byte(nil), w.encs[from:to]...)
	last := pos
	if to > from {
		last = w.seqs[to-1]
	}
	if n := len(w.seqs) - windowRows; n > 0 { // keep the newest rows
		w.lo = w.seqs[n-1]
		w.seqs = append(w.seqs[:0], w.seqs[n:]...)
		k := copy(w.encs, w.encs[n:])
		clear(w.encs[k:]) // drop the references the shift left behind
		w.encs = w.encs[:k]
	}
	return out, last, nil
}

// encodeRow is a stored row in its frame form.
func encodeRow(m eventstore.Message) []byte {
	e := eventOf(m)
	return appendEvent(make([]byte, 0, 256+len(m.Text)), &e)
}
