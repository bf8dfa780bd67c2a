package rest_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHistoryCacheFollowsWrites reads the same pages again after every kind of write that changes
// them: each answer must be what an uncached read gives, never the page cached before the write.
func TestHistoryCacheFollowsWrites(t *testing.T) {
	f := newFixture(t, nil)
	t0 := baseTime
	first := f.post("#pub", "Alice", aliceDID, "one", t0, nil)
	second := f.post("#pub", "bob", "", "two", t0.Add(time.Second), nil)
	paths := []string{
		"/api/v1/channels/pub/history",
		"/api/v1/channels/pub/history?limit=1",
		"/api/v1/history/pub",
		"/api/v1/history/pub?before=" + second,
	}
	read := func() []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			resp, body := f.get(p, "")
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Fatalf("GET %s: %d %s", p, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			out[i] = string(body)
		}
		return out
	}
	steps := []struct {
		name  string
		write func()
		want  []string // substrings of the answers to the paths, in order
	}{
		{"initial", func() {}, []string{`"text":"two"`, `"text":"two"`, `"text":"one"`, `"text":"one"`}},
		{"append", func() { f.post("#pub", "bob", "", "three", t0.Add(2*time.Second), nil) },
			[]string{`"text":"three"`, `"text":"three"`, `"text":"three"`, `"text":"one"`}},
		{"edit", func() { f.edit("#pub", "Alice", aliceDID, first, "uno", t0.Add(3*time.Second)) },
			[]string{`"text":"uno"`, `"text":"three"`, `"text":"uno"`, `"text":"uno"`}},
		{"react", func() {
			if err := f.store.React(context.Background(), second, "s-alice", "Alice", "👍", t0); err != nil {
				t.Fatal(err)
			}
		}, []string{`👍`, `"text":"three"`, `👍`, `"text":"uno"`}},
		{"unreact", func() {
			if err := f.store.Unreact(context.Background(), second, "s-alice", "👍"); err != nil {
				t.Fatal(err)
			}
		}, []string{`"text":"two"`, `"text":"three"`, `"text":"two"`, `"text":"uno"`}},
		{"delete", func() { f.remove(first) }, []string{`"text":"two"`, `"text":"three"`, `"text":"two"`, `[]`}},
	}
	for _, step := range steps {
		step.write()
		cold := read()
		warm := read() // served from the cache
		for i := range paths {
			if cold[i] != warm[i] {
				t.Errorf("%s: %s: cached %s, first read %s", step.name, paths[i], warm[i], cold[i])
			}
			if !strings.Contains(warm[i], step.want[i]) {
				t.Errorf("%s: %s = %s, want %s in it", step.name, paths[i], warm[i], step.want[i])
			}
		}
		if step.name == "unreact" && strings.Contains(warm[0], "👍") {
			t.Errorf("unreact: the reaction is still shown: %s", warm[0])
		}
	}
}
