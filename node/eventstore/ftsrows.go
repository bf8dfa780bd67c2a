package eventstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// Search-index rows, written in bulk.
//
// FTS5 flushes its pending changes into a new segment at every statement that writes to it inside
// a transaction, so a transaction's new index rows go in with as few statements as there can be:
// one multi-row INSERT of up to maxFTSChunk rows. A statement exists for 1, 2, 4, ..., maxFTSChunk
// rows; the rows of a transaction go in the smallest that holds them, its unused rows bound to
// NULL and skipped by the statement's WHERE. Binding parameters costs a fraction of what the
// JSON document this replaced did (encoded here, parsed and read back field by field by
// json_each and ->>: about half of the index's cost per message).

const (
	ftsChunkSizes = 10 // statements for 1 to maxFTSChunk rows
	maxFTSChunk   = 1 << (ftsChunkSizes - 1)
	ftsColumns    = 3 // parameters per row of sqlFTSInsertRows
)

// sqlFTSInsertRows indexes up to rows roots, each given as (okey, venue token, body), under
// -okey; a row whose okey is NULL is padding.
func sqlFTSInsertRows(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO messages_fts(rowid, venue, body) SELECT -column1, column2, column3 FROM (VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?)")
	}
	b.WriteString(`) WHERE column1 IS NOT NULL`)
	return b.String()
}

// ftsChunkStatements are the multi-row index inserts, for 1, 2, 4, ..., maxFTSChunk rows.
type ftsChunkStatements [ftsChunkSizes]*sql.Stmt

func (c *ftsChunkStatements) all() []namedStatement { return chunkStatements(c[:], sqlFTSInsertRows) }

// flushIndex writes the queued index rows.
func (tx *writeTxn) flushIndex(ctx context.Context) error {
	if len(tx.toIndex) == 0 {
		return nil
	}
	// FTS5 flushes its pending data whenever a rowid is not greater than the previous one, so the
	// rows go in ascending rowid (-okey) order: newest (time, seq) first.
	okeys := slices.Collect(maps.Keys(tx.toIndex))
	slices.SortFunc(okeys, func(a, b int64) int { return cmp.Compare(b, a) })
	for len(okeys) > 0 {
		n := min(len(okeys), maxFTSChunk)
		if err := tx.insertIndexChunk(ctx, okeys[:n]); err != nil {
			return err
		}
		okeys = okeys[n:]
	}
	clear(tx.toIndex)
	return nil
}

// insertIndexChunk indexes the queued roots of okeys (at most maxFTSChunk) with one statement.
func (tx *writeTxn) insertIndexChunk(ctx context.Context, okeys []int64) error {
	level := bits.Len(uint(len(okeys) - 1)) // the smallest statement that holds them
	args := tx.args[:0]
	for _, okey := range okeys {
		r := tx.toIndex[okey]
		args = append(args, okey, venueToken(r.venue), r.body)
	}
	for range (1<<level - len(okeys)) * ftsColumns {
		args = append(args, nil)
	}
	tx.args = args
	defer clear(args) // the strings are the callers'; do not keep them past the batch
	if tx.ftsChunks[level] == nil {
		tx.ftsChunks[level] = tx.sqlTx.StmtContext(ctx, tx.ftsSrc[level])
	}
	if _, err := tx.ftsChunks[level].ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("eventstore: index %d messages: %w", len(okeys), err)
	}
	return nil
}
