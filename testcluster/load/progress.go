package load

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressInterval is how often a running scenario reports on stderr.
const progressInterval = time.Second

// startProgress writes status() as one line to w every interval until the
// returned stop function is called (stop waits for the writer to finish).
// A nil w reports nothing.
func startProgress(w io.Writer, interval time.Duration, status func() string) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				fmt.Fprintln(w, status())
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// progressf writes one progress line to w, if any.
func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// lockedWriter serializes writes, so progress lines from the ticker and
// from the scenario do not interleave (nil stays nil).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newLockedWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return &lockedWriter{w: w}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
