package exchange

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestSafelySkipsOnlyWhatPanicked(t *testing.T) {
	tests := []struct {
		name     string
		fn       func()
		panicked bool
	}{
		{"runs", func() {}, false},
		{"panic", func() { panic("bug") }, true},
		{"nil map write", func() { var m map[string]int; m["x"] = 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			x := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Client: testClient(), PullEvery: time.Second, PageSize: 500, QueueSize: 4096})
			ran := false
			got := x.safely("deliver", func() { ran = true; tt.fn() }, "msgid", "m1")
			if got != tt.panicked || !ran {
				t.Fatalf("safely = %v (ran %v), want %v", got, ran, tt.panicked)
			}
			if l := logs.String(); tt.panicked != (strings.Contains(l, "stack=") && strings.Contains(l, "msgid=m1")) {
				t.Fatalf("log = %q", l)
			}
		})
	}
}
