package eventstore

import (
	"context"
	"strings"
	"sync"
	"unicode"
)

// Search finds live messages of venue whose current text holds every whitespace-separated term of
// query, each taken literally (FTS5 operators such as AND, NEAR(, *, - and quotes have no power),
// newest first. An edited message is found by its current text and reported as its root.
// beforeUnix is a strict upper bound in unix seconds (0 = none). A query without any searchable
// term (letters, digits) returns nothing.
//
// Two plans give the same answer. In a venue that holds most of the store's messages, the
// cheapest is to walk the matches of every venue, newest first, and keep the venue's: it reads a
// few more rows than it returns, while intersecting the terms with the venue's token (present in
// most rows) costs FTS5 far more (B13: 0.4 → 0.13 ms for a rare word over 1M messages). In a small
// venue that walk would read mostly other venues' messages, so the terms are intersected with the
// venue's token. Search tries the walk with a bounded budget of rows; when the budget runs out
// before the page is full it goes on with the intersection from where the walk stopped, and
// remembers the venue as sparse (see sparseVenues).
func (s *Store) Search(ctx context.Context, venue, query string, beforeUnix int64, limit int) ([]Message, error) {
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	hi, err := unixUpper(beforeUnix)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	phrases, ok := ftsQuery(query)
	if !ok {
		return nil, nil
	}
	body := `body : (` + phrases + `)`
	var out []Message
	if s.sparse.tryWalk(venue) {
		var done bool
		out, hi, done, err = s.searchWalk(ctx, body, venue, hi, limit)
		if err != nil {
			return nil, s.wrapReadErr("search "+venue, err)
		}
		s.sparse.record(venue, !done)
		if done {
			return out, nil
		}
	}
	match := `venue : "` + venueToken(venue) + `" AND ` + body
	all, inc := s.scopeArgs(venue)
	rows, err := s.r.search.QueryContext(ctx, match, hi, venue, limit-len(out), all, inc)
	if err != nil {
		return nil, s.wrapReadErr("search "+venue, err)
	}
	if out == nil {
		out = make([]Message, 0, min(limit, 64))
	}
	if out, err = appendMessages(out, rows); err != nil {
		return nil, s.wrapReadErr("search "+venue, err)
	}
	return out, nil
}

// walkBudget is how many matches of any venue searchWalk reads for a page of limit: enough that a
// venue holding more than about two thirds of the matches fills its page.
func walkBudget(limit int) int { return limit + limit/2 + 8 }

// searchWalk reads up to walkBudget(limit) matches of body strictly below the okey hi, newest
// first, and keeps venue's (up to limit). done reports that they are the whole answer: the page is
// full, or no match is left. Otherwise every match at or above next has been read, and the
// answer's remaining messages are venue's matches below next.
func (s *Store) searchWalk(ctx context.Context, body, venue string, hi int64, limit int) (out []Message, next int64, done bool, err error) {
	budget := walkBudget(limit)
	rows, err := s.r.searchWalk.QueryContext(ctx, body, hi, budget)
	if err != nil {
		return nil, 0, false, err
	}
	defer rows.Close()
	out = make([]Message, 0, min(limit, 64))
	all, inc := s.scopeArgs(venue)
	read := 0
	next = hi
	for rows.Next() {
		m, err := scanMessage(okeyFirst{rows, &next})
		if err != nil {
			return nil, 0, false, err
		}
		read++
		if m.Venue != venue || !(all || m.Public || m.Incarnation == inc) {
			continue
		}
		if out = append(out, m); len(out) == limit {
			return out, next, true, rows.Close()
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	return out, next, read < budget, nil
}

// okeyFirst scans a row whose first column is the okey into okey, and the rest into dest.
type okeyFirst struct {
	sc   scanner
	okey *int64
}

func (o okeyFirst) Scan(dest ...any) error {
	return o.sc.Scan(append([]any{o.okey}, dest...)...)
}

// sparseVenues remembers the venues in which searchWalk's budget ran out: their messages are a
// small share of the matches, and Search goes straight to intersecting the terms with their
// token. One search in sparseRetry walks again, so a venue that grows is noticed. The set is
// bounded: when it reaches maxSparseVenues it starts over.
type sparseVenues struct {
	mu    sync.Mutex
	skips map[string]int // venue → searches since its last walk
}

const (
	sparseRetry     = 64
	maxSparseVenues = 4096
)

// tryWalk reports whether a search of venue should walk first.
func (sv *sparseVenues) tryWalk(venue string) bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	n, sparse := sv.skips[venue]
	if !sparse {
		return true
	}
	sv.skips[venue] = n + 1
	return (n+1)%sparseRetry == 0
}

// record notes what a walk of venue found: whether its budget ran out.
func (sv *sparseVenues) record(venue string, ranOut bool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	switch {
	case !ranOut:
		delete(sv.skips, venue)
	case sv.skips == nil || len(sv.skips) >= maxSparseVenues:
		sv.skips = map[string]int{venue: 0}
	default:
		sv.skips[venue] = 0
	}
}

// ftsQuery turns user input into an FTS5 MATCH expression that matches it literally: each
// whitespace-separated term becomes a phrase (double quotes doubled inside it) and the phrases are
// joined with AND. Terms without a letter or digit are dropped, since the unicode61 tokenizer
// indexes nothing for them, and so are NUL and invalid UTF-8, which FTS5 cannot quote. ok is false
// when no term is left.
func ftsQuery(query string) (match string, ok bool) {
	query = strings.ToValidUTF8(query, " ")
	query = strings.ReplaceAll(query, "\x00", " ")
	var b strings.Builder
	for _, term := range strings.Fields(query) {
		if !strings.ContainsFunc(term, isTokenRune) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(term, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String(), b.Len() > 0
}

// isTokenRune reports whether the unicode61 tokenizer keeps r as part of a token.
func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}
