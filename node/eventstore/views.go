package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
)

// Positions in a venue's history are order keys (see orderkey.go); bounds are exclusive.
const (
	openLow  int64 = math.MinInt64
	openHigh int64 = math.MaxInt64
)

// view is a reading of venues' histories: the messages (the Store's own views) or, for an
// event-playback reader, the messages and the TAGMSGs kept with them (Playback, tagmsgs.go).
type view struct {
	s       *Store
	tagmsgs bool
}

func (s *Store) messages() view { return view{s: s} }

// Before returns the newest limit messages of venue strictly before the bound (open: the newest),
// oldest first. With a msgid Bound, walking back page by page visits every message exactly once.
func (s *Store) Before(ctx context.Context, venue string, before Bound, limit int) ([]Message, error) {
	return s.messages().before(ctx, venue, before, limit)
}

// After returns the oldest limit messages of venue strictly after the bound, oldest first.
func (s *Store) After(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	return s.messages().after(ctx, venue, after, limit)
}

// Latest returns the newest limit messages of venue (strictly after the bound when it is set),
// oldest first.
func (s *Store) Latest(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	return s.messages().latest(ctx, venue, after, limit)
}

// Between returns messages strictly between a and b, oldest first. Per IRCv3 CHATHISTORY BETWEEN,
// the page starts at a: when a is older than b these are the oldest limit messages after a,
// otherwise the newest limit messages before a. Both bounds are required.
func (s *Store) Between(ctx context.Context, venue string, a, b Bound, limit int) ([]Message, error) {
	return s.messages().between(ctx, venue, a, b, limit)
}

// Around returns up to limit messages around center, oldest first: about half before it and half
// after it, the center itself included when it is a msgid of a live message of venue. When one side
// runs short, the other side fills the page. A time center counts messages at that exact
// millisecond as after it.
func (s *Store) Around(ctx context.Context, venue string, center Bound, limit int) ([]Message, error) {
	return s.messages().around(ctx, venue, center, limit)
}

func (v view) before(ctx context.Context, venue string, before Bound, limit int) ([]Message, error) {
	hi, err := v.s.upper(ctx, venue, before)
	if err != nil {
		return nil, err
	}
	return v.newestIn(ctx, venue, openLow, hi, limit)
}

func (v view) after(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	lo, err := v.s.lower(ctx, venue, after)
	if err != nil {
		return nil, err
	}
	return v.oldestIn(ctx, venue, lo, openHigh, limit)
}

func (v view) latest(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	lo, err := v.s.lower(ctx, venue, after)
	if err != nil {
		return nil, err
	}
	return v.newestIn(ctx, venue, lo, openHigh, limit)
}

func (v view) between(ctx context.Context, venue string, a, b Bound, limit int) ([]Message, error) {
	if a.IsZero() || b.IsZero() {
		return nil, fmt.Errorf("%w: Between needs two bounds", ErrInvalidArgument)
	}
	pa, err := v.s.resolve(ctx, venue, a)
	if err != nil {
		return nil, err
	}
	pb, err := v.s.resolve(ctx, venue, b)
	if err != nil {
		return nil, err
	}
	if pa < pb {
		return v.oldestIn(ctx, venue, lowerOf(a, pa), pb, limit)
	}
	return v.newestIn(ctx, venue, lowerOf(b, pb), pa, limit)
}

func (v view) around(ctx context.Context, venue string, center Bound, limit int) ([]Message, error) {
	if center.IsZero() {
		return nil, fmt.Errorf("%w: Around needs a center", ErrInvalidArgument)
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	pc, err := v.s.resolve(ctx, venue, center)
	if err != nil {
		return nil, err
	}
	var middle []Message
	if center.MsgID != "" {
		cur, err := v.s.Current(ctx, center.MsgID)
		switch {
		case err == nil && (!v.s.Visible(cur) || !v.reads(cur)): // restricted, or a TAGMSG this view leaves out
		case err == nil:
			middle = append(middle, cur)
		case !errors.Is(err, ErrNotFound): // ErrNotFound: the center is deleted
			return nil, err
		}
	}
	rest := limit - len(middle)
	before, err := v.newestIn(ctx, venue, openLow, pc, max(rest, 1))
	if err != nil {
		return nil, err
	}
	afterLo := pc // after the center message
	if center.MsgID == "" {
		afterLo = pc - 1 // from the center millisecond on
	}
	after, err := v.oldestIn(ctx, venue, afterLo, openHigh, max(rest, 1))
	if err != nil {
		return nil, err
	}
	nBefore, nAfter := splitAround(rest, len(before), len(after))
	out := make([]Message, 0, nBefore+len(middle)+nAfter)
	out = append(out, before[len(before)-nBefore:]...)
	out = append(out, middle...)
	return append(out, after[:nAfter]...), nil
}

// reads reports whether the view returns a stored root: a kept TAGMSG only when it reads them.
func (v view) reads(m Message) bool { return v.tagmsgs || m.Command != "TAGMSG" }

// splitAround divides room slots between the available messages before and after a center: half
// each (the odd one after), a short side's unused slots going to the other side.
func splitAround(room, haveBefore, haveAfter int) (nBefore, nAfter int) {
	if room <= 0 {
		return 0, 0
	}
	nBefore = min(room/2, haveBefore)
	nAfter = min(room-nBefore, haveAfter)
	nBefore = min(room-nAfter, haveBefore)
	return nBefore, nAfter
}

// PageBeforeUnix is freeq's REST history page: the newest limit messages of venue with a time
// strictly before beforeUnix (unix seconds; 0 = no bound), oldest first. A client that pages by
// the oldest timestamp it holds misses the messages of that second that did not fit on its page;
// use Before with a msgid Bound for an exact walk.
func (s *Store) PageBeforeUnix(ctx context.Context, venue string, beforeUnix int64, limit int) ([]Message, error) {
	hi, err := unixUpper(beforeUnix)
	if err != nil {
		return nil, err
	}
	return s.messages().newestIn(ctx, venue, openLow, hi, limit)
}

// ExportAfter walks a venue's live messages oldest first by seq (arrival order): up to limit
// messages with seq > afterSeq, in current form. Pass the last Seq returned to continue.
func (s *Store) ExportAfter(ctx context.Context, venue string, afterSeq int64, limit int) ([]Message, error) {
	return s.messages().exportAfter(ctx, venue, afterSeq, limit)
}

func (v view) exportAfter(ctx context.Context, venue string, afterSeq int64, limit int) ([]Message, error) {
	s := v.s
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	all, inc := s.scopeArgs(venue)
	rows, err := s.r.exportFrom.QueryContext(ctx, venue, afterSeq, limit, all, inc, v.tagmsgs)
	if err != nil {
		return nil, s.wrapReadErr("export "+venue, err)
	}
	out, err := scanMessages(rows, limit)
	if err != nil {
		return nil, s.wrapReadErr("export "+venue, err)
	}
	return out, nil
}

// newestIn returns the newest limit live roots strictly between lo and hi, oldest first.
func (v view) newestIn(ctx context.Context, venue string, lo, hi int64, limit int) ([]Message, error) {
	out, err := v.rangeQuery(ctx, v.s.r.rangeDesc, venue, lo, hi, limit)
	reverse(out)
	return out, err
}

// oldestIn returns the oldest limit live roots strictly between lo and hi, oldest first.
func (v view) oldestIn(ctx context.Context, venue string, lo, hi int64, limit int) ([]Message, error) {
	return v.rangeQuery(ctx, v.s.r.rangeAsc, venue, lo, hi, limit)
}

func (v view) rangeQuery(ctx context.Context, st *sql.Stmt, venue string, lo, hi int64, limit int) ([]Message, error) {
	s := v.s
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	all, inc := s.scopeArgs(venue)
	rows, err := st.QueryContext(ctx, venue, lo, hi, limit, all, inc, v.tagmsgs)
	if err != nil {
		return nil, s.wrapReadErr("history of "+venue, err)
	}
	out, err := scanMessages(rows, min(limit, 64))
	if err != nil {
		return nil, s.wrapReadErr("history of "+venue, err)
	}
	return out, nil
}

// resolve gives the position of a non-zero bound: the okey of a msgid's root (which must be in
// venue), or the first okey of a millisecond (before every message of that millisecond).
func (s *Store) resolve(ctx context.Context, venue string, b Bound) (int64, error) {
	if b.MsgID == "" {
		return keysBeforeMs(b.Time.UnixMilli()), nil
	}
	if err := s.checkOpen(ctx); err != nil {
		return 0, err
	}
	var okey int64
	err := s.r.position.QueryRowContext(ctx, b.MsgID, venue).Scan(&okey)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s in %s", ErrNotFound, b.MsgID, venue)
	}
	if err != nil {
		return 0, s.wrapReadErr("resolve "+b.MsgID, err)
	}
	return okey, nil
}

// lower is the exclusive lower position of a bound: after a time means after its whole millisecond.
func (s *Store) lower(ctx context.Context, venue string, b Bound) (int64, error) {
	if b.IsZero() {
		return openLow, nil
	}
	p, err := s.resolve(ctx, venue, b)
	return lowerOf(b, p), err
}

// upper is the exclusive upper position of a bound: before a time means before its millisecond.
func (s *Store) upper(ctx context.Context, venue string, b Bound) (int64, error) {
	if b.IsZero() {
		return openHigh, nil
	}
	return s.resolve(ctx, venue, b)
}

// lowerOf turns a resolved bound into an exclusive lower position.
func lowerOf(b Bound, p int64) int64 {
	if b.MsgID == "" {
		return keysAfterMs(b.Time.UnixMilli())
	}
	return p
}

// unixUpper turns a strict "before this unix second" (0 = none) into an exclusive upper position.
func unixUpper(beforeUnix int64) (int64, error) {
	switch {
	case beforeUnix < 0:
		return 0, fmt.Errorf("%w: negative before %d", ErrInvalidArgument, beforeUnix)
	case beforeUnix == 0 || beforeUnix > maxTimeMs/1000:
		return openHigh, nil
	}
	return keysBeforeMs(beforeUnix * 1000), nil
}

// clampLimit refuses limit <= 0 (a caller bug) and caps it at MaxLimit.
func clampLimit(limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("%w: limit %d", ErrInvalidArgument, limit)
	}
	return min(limit, MaxLimit), nil
}
