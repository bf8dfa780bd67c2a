package media

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// The at-rest format of an object file: a header (magic, chunk size), then the plaintext in
// chunks of chunkSize bytes (the last one shorter, possibly empty), each sealed with AES-256-GCM
// under the object's key. The nonce is the chunk index; the additional data binds the object id,
// the index and whether the chunk is the last, so chunks cannot be moved, swapped between objects
// or cut off at a boundary. A range is served by decrypting only the chunks it touches.
const (
	magic     = "PLVMEDA1"
	chunkSize = 64 << 10
	tagSize   = 16
	headerLen = len(magic) + 4
	sealedLen = chunkSize + tagSize
)

// ErrCorrupt is the error of an object file that fails authentication or has the wrong shape.
var ErrCorrupt = errors.New("media: object file corrupt or tampered with")

// store keeps the objects this node reads and writes: sealed, in its blobs (objects.go: by
// default <dir>/objects/<id> on this node's disk; or an S3-compatible object store the cluster
// shares, s3.go). Under dir: tmp/ (uploads in progress, removed at open) and master.key (0600;
// the node's master key, never sent anywhere).
type store struct {
	dir    string
	master []byte
	blobs  blobs
	// shared: the blobs are the cluster's (an object store), sealed under the cluster's key
	// (sharedKey) rather than the node's, and read by every node alike.
	shared    bool
	sharedKey func() []byte
	used      atomic.Int64 // bytes of files under objects/ (disk blobs)
	maxUse    int64        // 0: no cap
}

func openStore(dir string, maxUse int64) (*store, error) {
	for _, sub := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return nil, fmt.Errorf("media directory: %w", err)
		}
	}
	// Uploads a previous process left half-written are never completed.
	tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		return nil, fmt.Errorf("media directory: %w", err)
	}
	for _, e := range tmp {
		_ = os.Remove(filepath.Join(dir, "tmp", e.Name()))
	}
	master, err := loadOrCreateKey(filepath.Join(dir, "master.key"))
	if err != nil {
		return nil, err
	}
	s := &store{dir: dir, master: master, maxUse: maxUse, blobs: diskBlobs{dir: filepath.Join(dir, "objects")}}
	err = filepath.WalkDir(filepath.Join(dir, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			s.used.Add(info.Size())
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("media directory: %w", err)
	}
	return s, nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) != 32 {
			return nil, fmt.Errorf("media master key %s: %d bytes, want 32", path, len(key))
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("media master key: %w", err)
	}
	key = make([]byte, 32)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("media master key: %w", err)
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, fmt.Errorf("media master key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("media master key: %w", err)
	}
	return key, f.Close()
}

// newID draws an object id: 128 random bits, base64url.
func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// validID reports whether id has the shape newID makes, so it is safe as a file name.
func validID(id string) bool {
	b, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(b) == 16 && base64.RawURLEncoding.EncodeToString(b) == id
}

func (s *store) objectPath(id string) string { return filepath.Join(s.dir, "objects", id) }

// errNoSharedKey: the cluster's key is not installed yet (shared blobs).
var errNoSharedKey = errors.New("media: the cluster's media key is not installed yet")

// aead is the cipher of one object: AES-256-GCM under HKDF(master, id), or, for shared blobs,
// HKDF(the cluster's key, id) so that every node opens what any node sealed.
func (s *store) aead(id string) (cipher.AEAD, error) {
	secret, label := s.master, "palaver-media-object-v1\x00"
	if s.shared {
		if secret, label = s.sharedKey(), "palaver-media-shared-object-v1\x00"; len(secret) == 0 {
			return nil, errNoSharedKey
		}
	}
	key, err := hkdf.Key(sha256.New, secret, nil, label+id, 32)
	if err != nil {
		return nil, fmt.Errorf("object key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("object cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

func chunkNonce(i int64) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], uint64(i))
	return n
}

func chunkAD(id string, i int64, last bool) []byte {
	ad := make([]byte, 0, len(id)+9)
	ad = append(ad, id...)
	ad = binary.BigEndian.AppendUint64(ad, uint64(i))
	if last {
		return append(ad, 1)
	}
	return append(ad, 0)
}

// writer seals an upload into a temporary file; commit renames it into place.
type writer struct {
	s      *store
	id     string
	f      *os.File
	aead   cipher.AEAD
	buf    []byte
	chunk  int64
	size   int64 // plaintext bytes written
	sealed []byte
	done   bool
}

// create starts writing object id.
func (s *store) create(id string) (*writer, error) {
	a, err := s.aead(id)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "upload-*")
	if err != nil {
		return nil, fmt.Errorf("media temp file: %w", err)
	}
	hdr := append([]byte(magic), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(hdr[len(magic):], chunkSize)
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("media temp file: %w", err)
	}
	return &writer{s: s, id: id, f: f, aead: a, buf: make([]byte, 0, chunkSize), sealed: make([]byte, 0, sealedLen)}, nil
}

func (w *writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		// A full chunk is sealed only when more data follows, so that the last one is known.
		if len(w.buf) == chunkSize {
			if err := w.flush(false); err != nil {
				return n, err
			}
		}
		take := min(len(p), chunkSize-len(w.buf))
		w.buf = append(w.buf, p[:take]...)
		p, n = p[take:], n+take
	}
	w.size += int64(n)
	return n, nil
}

func (w *writer) flush(last bool) error {
	w.sealed = w.aead.Seal(w.sealed[:0], chunkNonce(w.chunk), w.buf, chunkAD(w.id, w.chunk, last))
	if _, err := w.f.Write(w.sealed); err != nil {
		return fmt.Errorf("media temp file: %w", err)
	}
	w.chunk++
	w.buf = w.buf[:0]
	return nil
}

// bytesOnDisk is the sealed size of size plaintext bytes.
func bytesOnDisk(size int64) int64 {
	chunks := size/chunkSize + 1
	if size > 0 && size%chunkSize == 0 {
		chunks--
	}
	return int64(headerLen) + size + chunks*tagSize
}

// commit seals the last chunk, syncs the file and moves it into place. The disk cap is checked
// here, against what is really written.
func (w *writer) commit() error {
	if err := w.flush(true); err != nil {
		w.abort()
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return fmt.Errorf("media temp file: %w", err)
	}
	if err := w.f.Close(); err != nil {
		w.abort()
		return fmt.Errorf("media temp file: %w", err)
	}
	disk := bytesOnDisk(w.size)
	if w.s.shared {
		err := w.s.blobs.put(w.id, w.f.Name(), disk)
		w.abort() // the temporary file is not needed any more
		return err
	}
	if w.s.maxUse > 0 && w.s.used.Add(disk) > w.s.maxUse {
		w.s.used.Add(-disk)
		w.abort()
		return errDiskFull
	}
	if err := w.s.blobs.put(w.id, w.f.Name(), disk); err != nil {
		w.s.used.Add(-disk)
		w.abort()
		return err
	}
	w.done = true
	return nil
}

// abort removes the temporary file; safe after commit (it does nothing then).
func (w *writer) abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

var errDiskFull = errors.New("media: the node's media disk cap is reached")

// remove deletes a committed object (its record was refused or deleted).
func (s *store) remove(id string) error {
	freed, err := s.blobs.remove(id)
	if !s.shared {
		s.used.Add(-freed)
	}
	return err
}

// has reports whether the blobs hold object id (an error, such as an unreachable object store,
// counts as not known to be missing).
func (s *store) has(id string) bool {
	ok, err := s.blobs.has(id)
	return ok || err != nil
}

// full reports whether n more plaintext bytes would pass the disk cap.
func (s *store) full(n int64) bool {
	return !s.shared && s.maxUse > 0 && s.used.Load()+bytesOnDisk(n) > s.maxUse
}

// reader is an io.ReadSeeker over an object's plaintext, decrypting the chunks it touches.
type reader struct {
	f     blob
	id    string
	aead  cipher.AEAD
	size  int64
	last  int64 // index of the last chunk
	pos   int64
	mu    sync.Mutex
	cur   int64 // index of the chunk in plain, -1 for none
	plain []byte
	raw   []byte
}

// open opens object id for reading; the size comes from the file itself.
func (s *store) open(id string) (*reader, error) {
	if !validID(id) {
		return nil, fs.ErrNotExist
	}
	a, err := s.aead(id)
	if err != nil {
		return nil, err
	}
	f, err := s.blobs.open(id)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, headerLen)
	if got, err := f.ReadAt(hdr, 0); (err != nil && (got < len(hdr) || !errors.Is(err, io.EOF))) || string(hdr[:len(magic)]) != magic ||
		binary.BigEndian.Uint32(hdr[len(magic):]) != chunkSize {
		f.Close()
		return nil, ErrCorrupt
	}
	body := f.Size() - int64(headerLen)
	chunks := (body + sealedLen - 1) / sealedLen
	if chunks == 0 {
		f.Close()
		return nil, ErrCorrupt
	}
	lastLen := body - (chunks-1)*sealedLen - tagSize
	if lastLen < 0 {
		f.Close()
		return nil, ErrCorrupt
	}
	return &reader{f: f, id: id, aead: a, size: (chunks-1)*chunkSize + lastLen, last: chunks - 1, cur: -1,
		raw: make([]byte, sealedLen), plain: make([]byte, 0, chunkSize)}, nil
}

// Size is the plaintext size.
func (r *reader) Size() int64 { return r.size }

func (r *reader) Close() error { return r.f.Close() }

func (r *reader) load(i int64) error {
	if r.cur == i {
		return nil
	}
	n := int64(sealedLen)
	if i == r.last {
		n = r.size - i*chunkSize + tagSize
	}
	raw := r.raw[:n]
	// A ReaderAt may answer io.EOF with a full read that ends at the end (an object store's does).
	if got, err := r.f.ReadAt(raw, int64(headerLen)+i*sealedLen); err != nil && (got < len(raw) || !errors.Is(err, io.EOF)) {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	plain, err := r.aead.Open(r.plain[:0], chunkNonce(i), raw, chunkAD(r.id, i, i == r.last))
	if err != nil {
		r.cur = -1
		return ErrCorrupt
	}
	r.plain, r.cur = plain, i
	return nil
}

func (r *reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pos >= r.size {
		return 0, io.EOF
	}
	i := r.pos / chunkSize
	if err := r.load(i); err != nil {
		return 0, err
	}
	n := copy(p, r.plain[r.pos-i*chunkSize:])
	r.pos += int64(n)
	return n, nil
}

func (r *reader) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("media: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("media: negative position")
	}
	r.pos = offset
	return offset, nil
}
