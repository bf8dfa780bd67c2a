package eventstore

import (
	"context"
	"strings"
	"unicode"
)

// Search finds live messages of venue whose current text holds every whitespace-separated term of
// query, each taken literally (FTS5 operators such as AND, NEAR(, *, - and quotes have no power),
// newest first. An edited message is found by its current text and reported as its root.
// beforeUnix is a strict upper bound in unix seconds (0 = none). A query without any searchable
// term (letters, digits) returns nothing.
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
	match := `venue : "` + venueToken(venue) + `" AND body : (` + phrases + `)`
	rows, err := s.r.search.QueryContext(ctx, match, hi, venue, limit)
	if err != nil {
		return nil, s.wrapReadErr("search "+venue, err)
	}
	out, err := scanMessages(rows, min(limit, 64))
	if err != nil {
		return nil, s.wrapReadErr("search "+venue, err)
	}
	return out, nil
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
