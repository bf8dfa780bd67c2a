package media

import (
	"bytes"
	"crypto/rand"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testStore(t *testing.T, maxUse int64) *store {
	t.Helper()
	s, err := openStore(t.TempDir(), maxUse)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// put writes data as object id in writes of the given size.
func put(t *testing.T, s *store, id string, data []byte, step int) {
	t.Helper()
	w, err := s.create(id)
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(step, len(rest))
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.commit(); err != nil {
		t.Fatal(err)
	}
}

func TestStoreRoundTripAndRanges(t *testing.T) {
	s := testStore(t, 0)
	for _, tc := range []struct {
		size, step int
	}{{0, 1}, {1, 1}, {chunkSize - 1, 4096}, {chunkSize, chunkSize}, {chunkSize, 1000}, {chunkSize + 1, chunkSize},
		{3*chunkSize + 5, 7777}, {2 * chunkSize, chunkSize}} {
		data := make([]byte, tc.size)
		rand.Read(data)
		id := newID()
		put(t, s, id, data, tc.step)
		info, err := os.Stat(s.objectPath(id))
		if err != nil || info.Size() != bytesOnDisk(int64(tc.size)) {
			t.Fatalf("size %d: file %v, %v; want %d bytes", tc.size, info.Size(), err, bytesOnDisk(int64(tc.size)))
		}
		r, err := s.open(id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) || r.Size() != int64(tc.size) {
			t.Fatalf("size %d step %d: read %d bytes, %v", tc.size, tc.step, len(got), err)
		}
		for _, rg := range [][2]int{{0, 1}, {tc.size / 2, tc.size}, {chunkSize - 3, chunkSize + 3}, {tc.size - 1, tc.size}} {
			from, to := max(0, min(rg[0], tc.size)), max(0, min(rg[1], tc.size))
			if from >= to {
				continue
			}
			if _, err := r.Seek(int64(from), io.SeekStart); err != nil {
				t.Fatal(err)
			}
			part := make([]byte, to-from)
			if _, err := io.ReadFull(r, part); err != nil || !bytes.Equal(part, data[from:to]) {
				t.Fatalf("size %d range %d-%d: %v", tc.size, from, to, err)
			}
		}
		r.Close()
	}
	entries, _ := os.ReadDir(filepath.Join(s.dir, "tmp"))
	if len(entries) != 0 {
		t.Fatalf("%d files left in tmp", len(entries))
	}
}

func TestStoreRefusesTampering(t *testing.T) {
	data := make([]byte, 2*chunkSize+100)
	rand.Read(data)
	for _, tc := range []struct {
		name   string
		damage func(path string)
	}{
		{"flipped byte", func(p string) {
			b, _ := os.ReadFile(p)
			b[headerLen+chunkSize/2] ^= 1
			os.WriteFile(p, b, 0o600)
		}},
		{"cut at a chunk boundary", func(p string) { os.Truncate(p, int64(headerLen+2*sealedLen)) }},
		{"cut inside a chunk", func(p string) { os.Truncate(p, int64(headerLen+sealedLen+10)) }},
		{"chunks swapped", func(p string) {
			b, _ := os.ReadFile(p)
			one := append([]byte(nil), b[headerLen:headerLen+sealedLen]...)
			copy(b[headerLen:], b[headerLen+sealedLen:headerLen+2*sealedLen])
			copy(b[headerLen+sealedLen:], one)
			os.WriteFile(p, b, 0o600)
		}},
		{"bad header", func(p string) {
			b, _ := os.ReadFile(p)
			b[0] = 'X'
			os.WriteFile(p, b, 0o600)
		}},
	} {
		s := testStore(t, 0)
		id := newID()
		put(t, s, id, data, len(data))
		tc.damage(s.objectPath(id))
		r, err := s.open(id)
		if err == nil {
			_, err = io.ReadAll(r)
			r.Close()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tc.name, err)
		}
	}
	// Another object's file under this id does not decrypt either: the key and the data are bound to the id.
	s := testStore(t, 0)
	a, b := newID(), newID()
	put(t, s, a, data, len(data))
	os.Rename(s.objectPath(a), s.objectPath(b))
	if r, err := s.open(b); err == nil {
		if _, err := io.ReadAll(r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("moved object: %v", err)
		}
		r.Close()
	}
}

func TestStoreDiskCapAndAbort(t *testing.T) {
	s := testStore(t, bytesOnDisk(100)+bytesOnDisk(50))
	put(t, s, newID(), make([]byte, 100), 100)
	w, _ := s.create(newID())
	w.Write(make([]byte, 51))
	if err := w.commit(); !errors.Is(err, errDiskFull) {
		t.Fatalf("over the cap: %v", err)
	}
	w, _ = s.create(newID())
	w.Write(make([]byte, 10))
	w.abort()
	for _, sub := range []string{"tmp", "objects"} {
		entries, _ := os.ReadDir(filepath.Join(s.dir, sub))
		if want := map[string]int{"tmp": 0, "objects": 1}[sub]; len(entries) != want {
			t.Errorf("%s holds %d files, want %d", sub, len(entries), want)
		}
	}
	if !s.full(51) || s.full(50) {
		t.Errorf("full: used %d of %d", s.used.Load(), s.maxUse)
	}
	// A reopened store counts what is on disk and clears tmp.
	os.WriteFile(filepath.Join(s.dir, "tmp", "upload-left"), []byte("x"), 0o600)
	again, err := openStore(s.dir, s.maxUse)
	if err != nil || again.used.Load() != s.used.Load() {
		t.Fatalf("reopened: used %d, want %d (%v)", again.used.Load(), s.used.Load(), err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.dir, "tmp")); len(entries) != 0 {
		t.Errorf("tmp not cleared at open")
	}
}

func TestCleanFilename(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"photo.png", "photo.png"},
		{"../../etc/passwd", "passwd"},
		{`..\..\windows\system32\cmd.exe`, "cmd.exe"},
		{"/abs/path/x.txt", "x.txt"},
		{"..", "file"},
		{".hidden", "hidden"},
		{"", "file"},
		{"a\x00b\r\nc.txt", "abc.txt"},
		{"evil\u202egnp.exe", "evilgnp.exe"},
		{`quo"te.png`, "quote.png"},
		{string(make([]byte, 300)), "file"},
		{"ü" + string(bytes.Repeat([]byte("é"), 100)), "ü" + string(bytes.Repeat([]byte("é"), 63))},
	} {
		if got := cleanFilename(tc.in); got != tc.want {
			t.Errorf("cleanFilename(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCapability(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	id := newID()
	sig := capability(key, id)
	other := newID()
	for _, tc := range []struct {
		name    string
		key     []byte
		id, sig string
		ok      bool
	}{
		{"valid", key, id, sig, true},
		{"other id", key, other, sig, false},
		{"flipped sig", key, id, sig[:len(sig)-1] + string(sig[len(sig)-1]^1), false},
		{"truncated sig", key, id, sig[:10], false},
		{"other key", bytes.Repeat([]byte{2}, 32), id, sig, false},
		{"no key", nil, id, sig, false},
	} {
		if got := validCapability(tc.key, tc.id, tc.sig); got != tc.ok {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

func TestBlobOriginFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{[]string{"--blob-origin", "https://PDS.example.org/", "--blob-origin", "http://127.0.0.1:8080"}, []string{"https://pds.example.org", "http://127.0.0.1:8080"}, true},
		{[]string{"--blob-origin", "https://a.example,https://b.example"}, []string{"https://a.example", "https://b.example"}, true},
		{[]string{"--blob-origin", "https://a.example/xrpc"}, nil, false},
		{[]string{"--blob-origin", "ftp://a.example"}, nil, false},
		{[]string{"--blob-origin", "a.example"}, nil, false},
	} {
		o := Defaults()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.Flags(fs)
		err := fs.Parse(tc.args)
		if (err == nil) != tc.ok || (tc.ok && strings.Join(o.BlobOrigins, " ") != strings.Join(tc.want, " ")) {
			t.Errorf("%v: %v %v", tc.args, o.BlobOrigins, err)
		}
	}
	if d := Defaults(); d.QuotaBytes == 0 || d.DiskBytes == 0 || d.MaxSpaces == 0 || d.FetchTimeout == 0 {
		t.Errorf("defaults %+v", d)
	}
	if o := (Options{Dir: "x", QuotaBytes: 5}).withDefaults(); o.QuotaBytes != 5 || o.DiskBytes != Defaults().DiskBytes || o.Dir != "x" {
		t.Errorf("withDefaults %+v", o)
	}
}
