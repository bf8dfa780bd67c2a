package media

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/node/limits"
)

// MaxUploadBytes is the upload body limit of the contract (12 MB); a larger body is refused 413.
const MaxUploadBytes = limits.UploadBytes

// Options are the media surface's settings.
type Options struct {
	// Dir holds this node's objects (default: <data>/media, set by the node).
	Dir string
	// Store, when set (s3://bucket/prefix), keeps the objects in an S3-compatible object store the
	// cluster shares instead of on the nodes' disks (s3.go); S3 configures it.
	Store string
	S3    S3Options
	// QuotaBytes caps the bytes one DID may have uploaded, cluster-wide (0: no quota).
	QuotaBytes int64
	// DiskBytes caps the bytes of objects on this node's disk (0: no cap).
	DiskBytes int64
	// TotalBytes caps the bytes of every upload of the deployment, recorded in Raft (0: no cap).
	TotalBytes int64
	// AddressBytes caps the bytes one client address uploads through this node in an hour
	// (0: no cap).
	AddressBytes int64
	// MinFreeBytes is the free space an upload must leave on the media directory's file system
	// (0: no floor).
	MinFreeBytes int64
	// Replicas is how many servers of the cluster hold each upload's bytes, capped by the cluster
	// size (1 on a single node); an upload is answered once that many hold it.
	Replicas int
	// Retention deletes uploads older than it (0: kept until deleted).
	Retention time.Duration
	// SpaceAuthority is the base URL of the media space authority; empty: media spaces are off.
	SpaceAuthority string
	// MaxSpaces is the most media spaces the server holds (0: no maximum).
	MaxSpaces int
	// BlobOrigins are extra origins (scheme://host[:port]) whose getBlob URLs the blob proxy
	// serves, besides the Bluesky hosts of the reference.
	BlobOrigins []string
	// FetchTimeout bounds one fetch of the blob, preview and space-media proxies.
	FetchTimeout time.Duration
	// MaxProxyBytes bounds a body the blob and space-media proxies relay.
	MaxProxyBytes int64
	// DownloadsPerMinute caps the media downloads of one client address without a live bearer
	// (0: no limit).
	DownloadsPerMinute int

	// AllowLoopbackFetch lets the guarded fetches reach loopback addresses. Tests only: no flag.
	AllowLoopbackFetch bool
}

// Defaults returns the default options.
func Defaults() Options {
	return Options{
		QuotaBytes:    1 << 30,
		DiskBytes:     20 << 30,
		TotalBytes:    100 << 30,
		AddressBytes:  2 << 30,
		MinFreeBytes:  1 << 30,
		MaxSpaces:     1000,
		Replicas:      2,
		FetchTimeout:  15 * time.Second,
		MaxProxyBytes: 64 << 20,

		DownloadsPerMinute: 600,
	}
}

// withDefaults completes an Options that was not built by Defaults (its FetchTimeout is zero, as
// in a Config literal of a test): each numeric field left zero takes its default.
func (o Options) withDefaults() Options {
	if o.FetchTimeout > 0 {
		return o
	}
	d := Defaults()
	o.FetchTimeout = d.FetchTimeout
	for _, f := range []struct {
		dst *int64
		def int64
	}{{&o.QuotaBytes, d.QuotaBytes}, {&o.DiskBytes, d.DiskBytes}, {&o.MaxProxyBytes, d.MaxProxyBytes},
		{&o.TotalBytes, d.TotalBytes}, {&o.AddressBytes, d.AddressBytes}, {&o.MinFreeBytes, d.MinFreeBytes}} {
		if *f.dst == 0 {
			*f.dst = f.def
		}
	}
	if o.MaxSpaces == 0 {
		o.MaxSpaces = d.MaxSpaces
	}
	if o.Replicas == 0 {
		o.Replicas = d.Replicas
	}
	if o.DownloadsPerMinute == 0 {
		o.DownloadsPerMinute = d.DownloadsPerMinute
	}
	return o
}

// Flags declares the options' flags on fs, with the current values as defaults.
func (o *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.Dir, "media-dir", o.Dir, "directory of this node's uploaded media, encrypted at rest (default <data>/media)")
	fs.StringVar(&o.Store, "media-store", o.Store, "keep uploads in an S3-compatible object store shared by the cluster, s3://bucket/prefix, sealed before they leave the node (empty: on each node's disk under --media-dir)")
	fs.StringVar(&o.S3.Endpoint, "media-s3-endpoint", o.S3.Endpoint, "host[:port] of the object store's S3 API (default s3.amazonaws.com)")
	fs.StringVar(&o.S3.Region, "media-s3-region", o.S3.Region, "region of the object store's bucket (empty: asked of the store)")
	fs.StringVar(&o.S3.AccessKey, "media-s3-access-key", o.S3.AccessKey, "access key of the object store (empty, with no secret key file: the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY environment variables)")
	fs.StringVar(&o.S3.SecretKeyFile, "media-s3-secret-key-file", o.S3.SecretKeyFile, "file holding the object store's secret key")
	fs.BoolVar(&o.S3.Insecure, "media-s3-insecure", o.S3.Insecure, "speak plain HTTP to the object store (one on the same host or network only)")
	fs.BoolVar(&o.S3.PathStyle, "media-s3-path-style", o.S3.PathStyle, "name the bucket in the URL's path rather than its host name (most self-hosted stores)")
	fs.Int64Var(&o.QuotaBytes, "media-quota-bytes", o.QuotaBytes, "bytes one DID may upload in total, across the cluster (0: no quota)")
	fs.Int64Var(&o.DiskBytes, "media-disk-bytes", o.DiskBytes, "bytes of uploaded media this node keeps on disk; uploads beyond are refused 507 (0: no cap)")
	fs.Int64Var(&o.TotalBytes, "media-total-bytes", o.TotalBytes, "bytes of uploads the whole deployment keeps; uploads beyond are refused 507 (0: no cap)")
	fs.Int64Var(&o.AddressBytes, "media-address-bytes", o.AddressBytes, "bytes one client address may upload through this node per hour; beyond, 429 (0: no cap)")
	fs.Int64Var(&o.MinFreeBytes, "media-min-free-bytes", o.MinFreeBytes, "free space an upload must leave on the media directory's file system; otherwise 507 (0: no floor)")
	fs.IntVar(&o.Replicas, "media-replicas", o.Replicas, "servers of the cluster that hold each upload's bytes, capped by the cluster size; an upload is answered once that many hold it")
	fs.DurationVar(&o.Retention, "media-retention", o.Retention, "delete uploads older than this (0: keep them until their uploader or an operator deletes them)")
	fs.StringVar(&o.SpaceAuthority, "media-space-authority", o.SpaceAuthority, "base URL of the media space authority that creates channel media spaces (empty: media spaces off, 404)")
	fs.IntVar(&o.DownloadsPerMinute, "media-downloads-per-minute", o.DownloadsPerMinute, "media downloads one client address without a live bearer may make per minute; more are refused 429 (0: no limit)")
	fs.IntVar(&o.MaxSpaces, "max-media-spaces", o.MaxSpaces, "media spaces the server holds at most; more are refused 507 (0: no maximum)")
	fs.Func("blob-origin", "extra origin (https://host[:port]) of a PDS whose com.atproto.sync.getBlob URLs /api/v1/blob relays (repeatable; a comma-separated list in the environment)", func(v string) error {
		for _, item := range strings.Split(v, ",") {
			origin, err := parseOrigin(item)
			if err != nil {
				return err
			}
			o.BlobOrigins = append(o.BlobOrigins, origin)
		}
		return nil
	})
	fs.DurationVar(&o.FetchTimeout, "media-fetch-timeout", o.FetchTimeout, "time limit of one blob, link preview or media space fetch")
	fs.Int64Var(&o.MaxProxyBytes, "media-proxy-max-bytes", o.MaxProxyBytes, "largest body the blob and media space proxies relay")
}

// parseOrigin checks a --blob-origin value: scheme://host[:port], nothing more.
func parseOrigin(v string) (string, error) {
	v = strings.TrimRight(strings.TrimSpace(v), "/")
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("blob origin %q: want scheme://host[:port]", v)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}
