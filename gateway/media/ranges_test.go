package media

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/rest"
)

func TestNormalizeRange(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("%d-%d", i*10, i*10+1)
	}
	tests := []struct {
		name, header string
		size         int64
		want         string
		ok           bool
	}{
		{"one range", "bytes=0-5", 100, "bytes=0-5", true},
		{"open end", "bytes=90-", 100, "bytes=90-99", true},
		{"suffix", "bytes=-10", 100, "bytes=90-99", true},
		{"suffix over the size", "bytes=-500", 100, "bytes=0-99", true},
		{"end past the size", "bytes=50-500", 100, "bytes=50-99", true},
		{"overlapping merged", "bytes=0-10,5-20", 100, "bytes=0-20", true},
		{"adjacent merged", "bytes=0-9,10-19", 100, "bytes=0-19", true},
		{"out of order sorted", "bytes=50-59,0-9", 100, "bytes=0-9,50-59", true},
		{"duplicates merged", "bytes=0-0,0-0,0-0", 100, "bytes=0-0", true},
		{"unsatisfiable left out", "bytes=0-1,200-300", 100, "bytes=0-1", true},
		{"nothing satisfiable kept for 416", "bytes=200-300", 100, "bytes=200-300", true},
		{"more than MaxRanges coalesced", "bytes=" + strings.Join(many, ","), 1000, "bytes=0-391", true},
		{"spaces", "bytes= 0-1 , 4-5", 100, "bytes=0-1,4-5", true},
		{"other unit", "items=0-1", 100, "", false},
		{"no dash", "bytes=5", 100, "", false},
		{"reversed", "bytes=9-2", 100, "", false},
		{"negative", "bytes=-", 100, "", false},
		{"not a number", "bytes=a-b", 100, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := normalizeRange(tt.header, tt.size)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("normalizeRange(%q, %d) = %q, %v; want %q, %v", tt.header, tt.size, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzNormalizeRange(f *testing.F) {
	f.Add("bytes=0-5,3-9,-4", int64(100))
	f.Add("bytes=200-", int64(10))
	f.Add("bytes=", int64(0))
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -size
		}
		got, ok := normalizeRange(header, size)
		if !ok || got == header {
			return
		}
		// The result is well-formed, ordered, disjoint, within the size and at most MaxRanges.
		parts := strings.Split(strings.TrimPrefix(got, "bytes="), ",")
		if len(parts) > MaxRanges {
			t.Fatalf("%q: %d ranges", got, len(parts))
		}
		prev := int64(-2)
		for _, p := range parts {
			var first, last int64
			if _, err := fmt.Sscanf(p, "%d-%d", &first, &last); err != nil || first > last || first <= prev+1 || last >= size {
				t.Fatalf("%q from %q (size %d): bad range %q", got, header, size, p)
			}
			prev = last
		}
		if again, ok := normalizeRange(got, size); !ok || again != got {
			t.Fatalf("not stable: %q → %q", got, again)
		}
	})
}

// TestRangeAmplification: a 60 KB Range header of 7,498 ranges is answered with at most
// MaxRanges parts and no more bytes than the object; an unsatisfiable range is a 416 Error object.
func TestRangeAmplification(t *testing.T) {
	f := newFixture(t, nil)
	content := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	resp, up := f.upload("tok-alice", "blob.bin", content, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	specs := make([]string, 7498)
	for i := range specs {
		first := (i * 37) % 1000
		specs[i] = fmt.Sprintf("%d-%d", first, first)
	}
	header := "bytes=" + strings.Join(specs, ",")
	if len(header) < 50_000 || len(header) > rest.DefaultMaxHeaderBytes-1024 {
		t.Fatalf("header of %d bytes", len(header))
	}
	resp, body := f.do("GET", local(up.URL), "", nil, http.Header{"Range": {header}})
	if resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if len(body) > len(content) {
		t.Fatalf("answered %d bytes for an object of %d", len(body), len(content))
	}
	parts := 1
	if mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "multipart/byteranges" {
		parts = 0
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			if _, err := mr.NextPart(); err != nil {
				break
			}
			parts++
		}
	}
	if parts > MaxRanges {
		t.Fatalf("%d parts", parts)
	}

	// Overlapping ranges come back merged: one part.
	resp, body = f.do("GET", local(up.URL), "", nil, http.Header{"Range": {"bytes=0-9,5-15,10-19"}})
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, content[:20]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-19/%d", len(content)) {
		t.Fatalf("merged ranges: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	// An unsatisfiable range: 416, the Error object, Content-Range naming the size.
	resp, body = f.do("GET", local(up.URL), "", nil, http.Header{"Range": {"bytes=999999-"}})
	var e rest.ErrorObject
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable || json.Unmarshal(body, &e) != nil || e.Status != 416 ||
		e.Error != "Requested Range Not Satisfiable" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(content)) {
		t.Fatalf("unsatisfiable range: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestAnonymousDownloadLimit: downloads without a live bearer are counted per address (429 with
// Retry-After past the limit); a caller with a bearer is not.
func TestAnonymousDownloadLimit(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Options.DownloadsPerMinute = 3 })
	resp, up := f.upload("tok-alice", "a.bin", []byte("bytes"), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	for i := range 3 {
		if resp, _ := f.do("GET", local(up.URL), "", nil, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("download %d: %d", i, resp.StatusCode)
		}
	}
	resp, _ = f.do("GET", local(up.URL), "", nil, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth anonymous download: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := f.do("GET", local(up.URL), "tok-bob", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("download with a bearer: %d", resp.StatusCode)
	}
}
