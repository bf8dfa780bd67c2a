package node

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"
)

// FuzzUnpackArchive feeds arbitrary bytes to the archive reader of palaver restore: it refuses
// or accepts without panicking, and accepts only an archive whose files match its manifest.
func FuzzUnpackArchive(f *testing.F) {
	f.Add([]byte{})
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	manifest := []byte(`{"format":"palaver-backup/1","files":[]}`)
	tw.WriteHeader(&tar.Header{Name: "raft/snapshot", Mode: 0o600, Size: 3, Typeflag: tar.TypeReg})
	tw.Write([]byte("abc"))
	tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(manifest)), Typeflag: tar.TypeReg})
	tw.Write(manifest)
	tw.Close()
	gz.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := unpack(bytes.NewReader(data), t.TempDir())
		if err == nil && (m == nil || m.Format != BackupFormat) {
			t.Fatalf("accepted without a manifest of this format: %+v", m)
		}
	})
}
