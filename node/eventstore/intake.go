package eventstore

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The intake log: where an Append becomes durable.
//
// An appended message is acknowledged once its record is in the intake log and the log is synced;
// the database applies it a moment later, in large transactions, on the writer goroutine (see
// DESIGN.md, "Acknowledged by the intake log"). The log is a directory of segment files beside the
// database (<database>.intake/), numbered in the order they are used. A segment is created full
// size and zero-filled before it is used, by a goroutine of its own ahead of need, so that writing
// a record never allocates blocks or changes the file's size: its sync is then an fdatasync that
// flushes the record's data only, and does not wait for the file system's journal, which the
// database's own fsyncs keep busy. A segment is a run of frames:
//
//	uint32 length of the payload, little endian (0: the end of the segment's records)
//	uint32 CRC-32C of the payload
//	payload: the message's fields (appendIntakeRecord)
//
// Records are written in seq order. A crash can leave the last frame written torn; nothing after
// it was acknowledged (an acknowledgement waits for the sync that covers its frame and every frame
// before it), so reading stops there. At Open the store applies every record the database does not
// hold, fsyncs the database's log and removes the segments. While the store runs, a segment is
// removed once every record in it is applied and the database's log is fsynced past it.

// intakeSegmentBytes is the size of a segment (a variable for tests).
var intakeSegmentBytes int64 = 16 << 20

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// intakeLog is the open log. Only the intake goroutine touches it after Open.
type intakeLog struct {
	dir    string
	noSync bool
	f      *os.File // the segment being written; nil with noSync
	index  int64    // f's number
	size   int64    // bytes written to f
	last   int64    // greatest seq written
	old    []intakeSegment
	buf    []byte
	// spare delivers the next segment, created and zero-filled ahead of need (or the error that
	// stopped it).
	spare chan spareSegment
	// sync is fdatasync (intakeDataSync); tests replace it to hold or fail a sync.
	sync func(*os.File) error
	lock *os.File // held while the log is open (lockIntake); nil with noSync
}

type spareSegment struct {
	f   *os.File
	err error
}

type intakeSegment struct {
	path string
	last int64 // greatest seq in it
}

func intakeDir(dbPath string) string { return dbPath + ".intake" }

// lockIntake creates the intake log's directory and takes its lock: two stores on one database
// would each apply and remove the other's segments.
func lockIntake(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eventstore: create the intake log: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, privateFileMode)
	if err != nil {
		return nil, fmt.Errorf("eventstore: intake log lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("eventstore: the intake log %s: %w", dir, err)
	}
	return f, nil
}

func segmentPath(dir string, index int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.log", index))
}

// readIntake returns every complete record of the intake log at dir, in seq order, the paths of
// its segments and the greatest segment number. A missing directory is an empty log.
func readIntake(dir string) (recs []pendingMessage, paths []string, top int64, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("eventstore: read the intake log: %w", err)
	}
	type seg struct {
		index int64
		path  string
	}
	var segs []seg
	for _, e := range entries {
		name := e.Name()
		index, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil || !strings.HasSuffix(name, ".log") || e.IsDir() {
			continue
		}
		segs = append(segs, seg{index, filepath.Join(dir, name)})
		top = max(top, index)
	}
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(a.index, b.index) })
	for _, sg := range segs {
		got, err := readIntakeSegment(sg.path)
		if err != nil {
			return nil, nil, 0, err
		}
		recs = append(recs, got...)
		paths = append(paths, sg.path)
	}
	slices.SortStableFunc(recs, func(a, b pendingMessage) int { return cmp.Compare(a.jseq, b.jseq) })
	return recs, paths, top, nil
}

// readIntakeSegment decodes a segment's frames up to its end: a zero length (the unused, zeroed
// rest), the end of the file, or a torn frame (one that was being written when the process
// stopped, and so was never acknowledged).
func readIntakeSegment(path string) ([]pendingMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eventstore: open intake segment: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	var out []pendingMessage
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return out, nil
			}
			return nil, fmt.Errorf("eventstore: intake segment %s: %w", path, err)
		}
		n := binary.LittleEndian.Uint32(head[0:4])
		sum := binary.LittleEndian.Uint32(head[4:8])
		if n == 0 || n > maxIntakeFrame {
			return out, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return out, nil
		}
		if crc32.Checksum(payload, crc32c) != sum {
			return out, nil
		}
		m, err := decodeIntakeRecord(payload)
		if err != nil {
			return nil, fmt.Errorf("eventstore: intake segment %s: %w", path, err)
		}
		out = append(out, m)
	}
}

// maxIntakeFrame bounds a frame's payload; a larger length is a torn header.
const maxIntakeFrame = 64 << 20

// openIntake starts the log after segment number top, removing the segments given (their records
// are applied and durable in the database). Its first record will have seq next.
func openIntake(dir string, top, next int64, applied []string, noSync bool) (*intakeLog, error) {
	l := &intakeLog{dir: dir, noSync: noSync, index: top, last: next - 1, sync: intakeDataSync}
	if noSync {
		for _, p := range applied {
			os.Remove(p)
		}
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eventstore: create the intake log: %w", err)
	}
	for _, p := range applied {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("eventstore: remove an applied intake segment: %w", err)
		}
	}
	f, err := createSegment(dir, top+1)
	if err != nil {
		return nil, err
	}
	l.f, l.index = f, top+1
	l.spare = make(chan spareSegment, 1)
	go l.prepare(l.index + 1)
	return l, nil
}

// createSegment creates segment index full size, zero-filled and synced, with its name durable.
func createSegment(dir string, index int64) (*os.File, error) {
	path := segmentPath(dir, index)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, privateFileMode)
	if err != nil {
		return nil, fmt.Errorf("eventstore: create intake segment: %w", err)
	}
	zeros := make([]byte, 1<<20)
	for written := int64(0); written < intakeSegmentBytes; {
		n, err := f.Write(zeros[:min(int64(len(zeros)), intakeSegmentBytes-written)])
		written += int64(n)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("eventstore: fill intake segment: %w", err)
		}
	}
	err = f.Sync()
	if err == nil {
		err = syncDir(dir)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eventstore: intake segment: %w", err)
	}
	return f, nil
}

// prepare creates the next segment ahead of need.
func (l *intakeLog) prepare(index int64) {
	f, err := createSegment(l.dir, index)
	l.spare <- spareSegment{f, err}
}

// add encodes a record into the pending write.
func (l *intakeLog) add(m *pendingMessage, seq int64) {
	l.last = seq
	if l.noSync {
		return
	}
	at := len(l.buf)
	l.buf = append(l.buf, 0, 0, 0, 0, 0, 0, 0, 0)
	l.buf = appendIntakeRecord(l.buf, m, seq)
	payload := l.buf[at+8:]
	binary.LittleEndian.PutUint32(l.buf[at:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(l.buf[at+4:], crc32.Checksum(payload, crc32c))
}

// flush writes the records added since the last flush and syncs them. first is the seq of the
// first of them.
func (l *intakeLog) flush(first int64) error {
	if l.noSync || len(l.buf) == 0 {
		l.buf = l.buf[:0]
		return nil
	}
	defer func() { l.buf = l.buf[:0] }()
	// A write that does not fit in the segment's zeroed space goes to the next segment (after
	// the records before it, which are in this one); one larger than a segment grows its file.
	if l.size > 0 && l.size+int64(len(l.buf)) > intakeSegmentBytes {
		if err := l.nextSegment(first - 1); err != nil {
			return err
		}
	}
	n, err := l.f.Write(l.buf)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("eventstore: write the intake log: %w", err)
	}
	if err := l.sync(l.f); err != nil {
		return fmt.Errorf("eventstore: sync the intake log: %w", err)
	}
	return nil
}

// nextSegment moves on to the spare segment; the current one, whose greatest seq is last, is kept
// until the database holds its records.
func (l *intakeLog) nextSegment(last int64) error {
	sp := <-l.spare
	if sp.err != nil {
		go l.prepare(l.index + 1) // try again for the next rotation
		return sp.err
	}
	l.old = append(l.old, intakeSegment{path: l.f.Name(), last: last})
	if err := l.f.Close(); err != nil {
		l.old = l.old[:len(l.old)-1]
		sp.f.Close()
		return fmt.Errorf("eventstore: close intake segment: %w", err)
	}
	l.f, l.size = sp.f, 0
	l.index++
	go l.prepare(l.index + 1)
	return nil
}

// removeApplied removes the older segments whose records are all at or below durable (applied and
// fsynced in the database).
func (l *intakeLog) removeApplied(durable int64) error {
	kept := l.old[:0]
	var errs []error
	for _, sg := range l.old {
		if sg.last <= durable {
			if err := os.Remove(sg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				kept = append(kept, sg)
			}
			continue
		}
		kept = append(kept, sg)
	}
	l.old = kept
	return errors.Join(errs...)
}

// close closes the log; with removeAll (every record applied and durable in the database) its
// segments are removed. The spare being prepared is waited for and removed.
func (l *intakeLog) close(removeAll bool) error {
	if l.f == nil {
		return nil
	}
	var errs []error
	defer func() {
		if l.lock != nil {
			l.lock.Close()
			l.lock = nil
		}
	}()
	sp := <-l.spare
	if sp.f != nil {
		errs = append(errs, sp.f.Close(), os.Remove(sp.f.Name()))
	}
	errs = append(errs, l.f.Close())
	if removeAll {
		paths := []string{l.f.Name()}
		for _, sg := range l.old {
			paths = append(paths, sg.path)
		}
		for _, p := range paths {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	l.f = nil
	return errors.Join(errs...)
}

// appendIntakeRecord encodes a message: its seq, then its fields in a fixed order, strings as a
// uvarint length and bytes.
func appendIntakeRecord(b []byte, m *pendingMessage, seq int64) []byte {
	b = binary.AppendUvarint(b, uint64(seq))
	b = binary.AppendVarint(b, m.Time.UnixMilli())
	for _, s := range [...]string{m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID, m.Text,
		m.tagsJSON, m.ReplacesMsgID, m.Origin, m.Incarnation} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	public := byte(0)
	if m.Public {
		public = 1
	}
	b = append(b, public)
	return binary.AppendVarint(b, m.ResumeFrom)
}

var errBadIntakeRecord = errors.New("malformed intake record")

func decodeIntakeRecord(b []byte) (pendingMessage, error) {
	var m pendingMessage
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return m, errBadIntakeRecord
	}
	b = b[n:]
	ms, n := binary.Varint(b)
	if n <= 0 {
		return m, errBadIntakeRecord
	}
	b = b[n:]
	fields := [...]*string{&m.MsgID, &m.Venue, &m.Command, &m.Sender, &m.SenderNick, &m.SenderDID, &m.Text,
		&m.tagsJSON, &m.ReplacesMsgID, &m.Origin, &m.Incarnation}
	for _, f := range fields {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return m, errBadIntakeRecord
		}
		*f = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	if len(b) < 1 {
		return m, errBadIntakeRecord
	}
	m.Public = b[0] == 1
	b = b[1:]
	resume, n := binary.Varint(b)
	if n <= 0 || n != len(b) {
		return m, errBadIntakeRecord
	}
	m.ResumeFrom = resume
	m.Time = time.UnixMilli(ms).UTC()
	m.jseq = int64(seq)
	return m, nil
}
