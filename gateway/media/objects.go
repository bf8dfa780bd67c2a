package media

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// blobs keeps sealed object files by id: on this node's disk (diskBlobs) or in an S3-compatible
// object store the cluster shares (s3Blobs, s3.go).
type blobs interface {
	// put moves the sealed temporary file at path (size bytes, synced and closed) into place as id.
	put(id, path string, size int64) error
	// open opens id for reading; fs.ErrNotExist when there is no such object.
	open(id string) (blob, error)
	// remove deletes id and answers the bytes freed (0 and no error when there was none).
	remove(id string) (int64, error)
	// has reports whether id exists.
	has(id string) (bool, error)
	// list calls f for every object, with its size and last change.
	list(f func(id string, size int64, changed time.Time)) error
}

// blob is one sealed object being read.
type blob interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// diskBlobs are files under dir, named by id.
type diskBlobs struct{ dir string }

func (d diskBlobs) path(id string) string { return filepath.Join(d.dir, id) }

func (d diskBlobs) put(id, path string, _ int64) error {
	if err := os.Rename(path, d.path(id)); err != nil {
		return fmt.Errorf("media object: %w", err)
	}
	return nil
}

// sizedFile is an open object file and its size.
type sizedFile struct {
	*os.File
	size int64
}

func (f sizedFile) Size() int64 { return f.size }

func (d diskBlobs) open(id string) (blob, error) {
	f, err := os.Open(d.path(id))
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return sizedFile{File: f, size: info.Size()}, nil
}

func (d diskBlobs) remove(id string) (int64, error) {
	info, err := os.Stat(d.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("media object: %w", err)
	}
	if err := os.Remove(d.path(id)); err != nil {
		return 0, fmt.Errorf("media object: %w", err)
	}
	return info.Size(), nil
}

func (d diskBlobs) has(id string) (bool, error) {
	_, err := os.Stat(d.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (d diskBlobs) list(f func(id string, size int64, changed time.Time)) error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("media objects: %w", err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			f(e.Name(), info.Size(), info.ModTime())
		}
	}
	return nil
}
