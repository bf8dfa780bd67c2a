package media

import (
	"bytes"
	"encoding/base64"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"at://did:plc:abc/app.bsky.feed.post/3k", "at://did:web:x/a.b.c/..", "https://x/a/b", ""} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(s)))
	}
	f.Add("***")
	f.Fuzz(func(t *testing.T, ref string) {
		uri, err := parseRef(ref)
		if err != nil {
			return
		}
		for _, part := range []string{uri.did, uri.collection, uri.rkey} {
			if part == "" || strings.ContainsAny(part, "/?#&= ") || part == "." || part == ".." {
				t.Fatalf("parseRef(%q) accepted part %q", ref, part)
			}
		}
		if !strings.HasPrefix(uri.did, "did:") {
			t.Fatalf("parseRef(%q) accepted DID %q", ref, uri.did)
		}
	})
}

func FuzzParsePreview(f *testing.F) {
	f.Add(`<html><head><title>t</title><meta property="og:title" content="x"><meta name=description content=d></head></html>`)
	f.Add(`<meta property="og:image" content="javascript:alert(1)"><meta property="og:url" content="//evil">`)
	f.Add("<title>" + strings.Repeat("é", 2000))
	base, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, doc string) {
		p := parsePreview(strings.NewReader(doc), base)
		for _, v := range []string{p.Title, p.Description, p.SiteName, p.Image, p.URL} {
			if len(v) > maxPreviewField || !utf8.ValidString(v) && utf8.ValidString(doc) {
				t.Fatalf("field %q: too long or broken", v)
			}
		}
		for _, v := range []string{p.Image, p.URL} {
			if v != "" && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				t.Fatalf("non-http URL kept: %q", v)
			}
		}
	})
}

func FuzzCleanFilename(f *testing.F) {
	for _, s := range []string{"a.png", "../../x", `..\..\x`, "\u202e", ".", "", "a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := cleanFilename(name)
		if got == "" || len(got) > maxFilename || strings.ContainsAny(got, "/\\\"\x00\r\n") || strings.HasPrefix(got, ".") || !utf8.ValidString(got) {
			t.Fatalf("cleanFilename(%q) = %q", name, got)
		}
	})
}

func FuzzReadForm(f *testing.F) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.SetBoundary("b0undary")
	mw.WriteField("private", "1")
	w, _ := mw.CreateFormFile("file", "x.txt")
	w.Write([]byte("hello"))
	mw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("--b0undary\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var sink bytes.Buffer
		form, status, err := readForm(multipart.NewReader(bytes.NewReader(body), "b0undary"), &sink)
		if err == nil && (!form.hasFile || form.size != int64(sink.Len()) || status != 0) {
			t.Fatalf("accepted %+v with %d bytes written", form, sink.Len())
		}
		if err != nil && status != 400 && status != 413 {
			t.Fatalf("status %d for %v", status, err)
		}
	})
}

func FuzzParseStoreURL(f *testing.F) {
	for _, s := range []string{"s3://media", "s3://media/uploads/", "s3://my.bucket/a/b", "s3://Media/x", "s3://media//x",
		"s3://media/../x", "s3://u:p@media/x", "s3://media/x?y", "https://media/x", "s3:///x", "s3://media/%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		bucket, prefix, err := parseStoreURL(v)
		if err != nil {
			return
		}
		if s3utils.CheckValidBucketNameStrict(bucket) != nil {
			t.Fatalf("parseStoreURL(%q) accepted bucket %q", v, bucket)
		}
		if prefix != "" {
			if !strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") || !utf8.ValidString(prefix) {
				t.Fatalf("parseStoreURL(%q) accepted prefix %q", v, prefix)
			}
			for _, seg := range strings.Split(strings.TrimSuffix(prefix, "/"), "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Fatalf("parseStoreURL(%q) accepted prefix %q", v, prefix)
				}
			}
		}
		b2, p2, err := parseStoreURL("s3://" + bucket + "/" + prefix)
		if err != nil || b2 != bucket || p2 != prefix {
			t.Fatalf("parseStoreURL(%q) = %q %q, which does not parse back (%q %q %v)", v, bucket, prefix, b2, p2, err)
		}
	})
}
