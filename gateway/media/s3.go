package media

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// An S3-compatible object store as the cluster's shared media store (--media-store
// s3://bucket/prefix). Objects are sealed on the node exactly as on its disk (store.go), under a
// key derived from the cluster's media key (HKDF over the capability key that Raft holds, with a
// label of its own) so that every node opens what any node wrote: the store sees only sealed
// chunks. The store keeps its own redundancy, so an upload is one object (no copies between
// nodes, no repair), and every node reads it from the store directly, by ranged GETs of the
// chunks a Range touches.

// s3OpTimeout bounds one object store call other than a read.
const s3OpTimeout = 2 * time.Minute

// S3Options configure the object store of --media-store s3://...
type S3Options struct {
	// Endpoint is host[:port] of the S3 API (default s3.amazonaws.com).
	Endpoint string
	// Region is the bucket's region (empty: asked of the store).
	Region string
	// AccessKey and SecretKeyFile (a file holding the secret key) are the credentials; both empty:
	// the AWS_* environment variables.
	AccessKey     string
	SecretKeyFile string
	// Insecure speaks plain HTTP to the endpoint (a store on the same host or a test).
	Insecure bool
	// PathStyle addresses the bucket in the path rather than the host name.
	PathStyle bool
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
}

// parseStoreURL splits s3://bucket/prefix: a valid bucket name, and a prefix of path segments
// (none empty, "." or "..", no control characters), returned with a trailing slash.
func parseStoreURL(v string) (bucket, prefix string, err error) {
	bad := fmt.Errorf("media store %q: want s3://bucket[/prefix]", v)
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "s3" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		u.Opaque != "" || u.RawPath != "" || s3utils.CheckValidBucketNameStrict(u.Host) != nil {
		return "", "", bad
	}
	prefix = strings.TrimSuffix(strings.TrimPrefix(u.Path, "/"), "/")
	if prefix == "" {
		return u.Host, "", nil
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, unicode.IsControl) || !utf8.ValidString(seg) {
			return "", "", bad
		}
	}
	return u.Host, prefix + "/", nil
}

// s3Blobs are the objects under prefix in bucket.
type s3Blobs struct {
	c      *minio.Client
	bucket string
	prefix string
}

// openS3 connects to the store of storeURL and checks that its bucket exists.
func openS3(ctx context.Context, storeURL string, o S3Options) (*s3Blobs, error) {
	bucket, prefix, err := parseStoreURL(storeURL)
	if err != nil {
		return nil, err
	}
	creds := credentials.NewEnvAWS()
	if o.AccessKey != "" || o.SecretKeyFile != "" {
		secret, err := os.ReadFile(o.SecretKeyFile)
		if err != nil {
			return nil, fmt.Errorf("media store secret key: %w", err)
		}
		creds = credentials.NewStaticV4(o.AccessKey, strings.TrimSpace(string(secret)), "")
	}
	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	lookup := minio.BucketLookupAuto
	if o.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: !o.Insecure, Region: o.Region,
		BucketLookup: lookup, Transport: o.Transport})
	if err != nil {
		return nil, fmt.Errorf("media store %s: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s3OpTimeout)
	defer cancel()
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("media store %s: bucket %s: %w", endpoint, bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("media store %s: no bucket %s", endpoint, bucket)
	}
	return &s3Blobs{c: c, bucket: bucket, prefix: prefix}, nil
}

func (b *s3Blobs) name(id string) string { return b.prefix + id }

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s3OpTimeout)
}

func (b *s3Blobs) put(id, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("media object: %w", err)
	}
	defer f.Close()
	ctx, cancel := opContext()
	defer cancel()
	if _, err := b.c.PutObject(ctx, b.bucket, b.name(id), f, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("media store: writing %s: %w", id, err)
	}
	return nil
}

func notFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == minio.NoSuchKey || code == "NotFound"
}

// s3Object is an object being read; each ReadAt is one ranged GET.
type s3Object struct {
	*minio.Object
	size   int64
	cancel context.CancelFunc
}

func (o s3Object) Size() int64 { return o.size }

func (o s3Object) Close() error {
	defer o.cancel()
	return o.Object.Close()
}

func (b *s3Blobs) open(id string) (blob, error) {
	ctx, cancel := context.WithCancel(context.Background())
	obj, err := b.c.GetObject(ctx, b.bucket, b.name(id), minio.GetObjectOptions{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("media store: reading %s: %w", id, err)
	}
	info, err := obj.Stat()
	if err != nil {
		obj.Close()
		cancel()
		if notFound(err) {
			return nil, fs.ErrNotExist
		}
		return nil, fmt.Errorf("media store: reading %s: %w", id, err)
	}
	return s3Object{Object: obj, size: info.Size, cancel: cancel}, nil
}

func (b *s3Blobs) remove(id string) (int64, error) {
	ctx, cancel := opContext()
	defer cancel()
	info, err := b.c.StatObject(ctx, b.bucket, b.name(id), minio.StatObjectOptions{})
	if notFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("media store: removing %s: %w", id, err)
	}
	if err := b.c.RemoveObject(ctx, b.bucket, b.name(id), minio.RemoveObjectOptions{}); err != nil {
		return 0, fmt.Errorf("media store: removing %s: %w", id, err)
	}
	return info.Size, nil
}

func (b *s3Blobs) has(id string) (bool, error) {
	ctx, cancel := opContext()
	defer cancel()
	_, err := b.c.StatObject(ctx, b.bucket, b.name(id), minio.StatObjectOptions{})
	switch {
	case err == nil:
		return true, nil
	case notFound(err):
		return false, nil
	}
	return false, fmt.Errorf("media store: %s: %w", id, err)
}

func (b *s3Blobs) list(f func(id string, size int64, changed time.Time)) error {
	ctx, cancel := opContext()
	defer cancel()
	for info := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix, Recursive: true}) {
		if info.Err != nil {
			return fmt.Errorf("media store: listing: %w", info.Err)
		}
		id := strings.TrimPrefix(info.Key, b.prefix)
		if validID(id) {
			f(id, info.Size, info.LastModified)
		}
	}
	return nil
}
