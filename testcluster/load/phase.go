package load

import (
	"context"
	"io"
	"sync"
	"time"
)

// A phase is the measured part of a scenario: the runner every scenario
// shares reads this process's CPU and the server's (when known) at its
// start and end, writes a progress line every second while it lasts and
// gives the elapsed wall time.

// phase is one measured part of a run.
type phase struct {
	start       time.Time
	cpuStart    time.Duration
	serverCPU   func() (time.Duration, error)
	serverStart time.Duration
	stop        func()
}

// phaseTotals is what a phase measured.
type phaseTotals struct {
	Elapsed   time.Duration
	ClientCPU time.Duration // this process's user+system CPU
	ServerCPU time.Duration // the server's; 0 when unknown
}

// startPhase begins a phase: status(elapsed) is written to out every
// progressInterval until end. serverCPU may be nil.
func startPhase(out io.Writer, serverCPU func() (time.Duration, error), status func(elapsed time.Duration) string) (*phase, error) {
	p := &phase{serverCPU: serverCPU}
	var err error
	if p.cpuStart, err = ProcessCPU(); err != nil {
		return nil, err
	}
	if serverCPU != nil {
		if p.serverStart, err = serverCPU(); err != nil {
			return nil, err
		}
	}
	p.start = time.Now()
	p.stop = func() {}
	if status != nil {
		p.stop = startProgress(out, progressInterval, func() string { return status(time.Since(p.start)) })
	}
	return p, nil
}

// end stops the progress lines and returns the totals.
func (p *phase) end() (phaseTotals, error) {
	t := phaseTotals{Elapsed: time.Since(p.start)}
	p.stop()
	cpu, err := ProcessCPU()
	if err != nil {
		return t, err
	}
	t.ClientCPU = cpu - p.cpuStart
	if p.serverCPU != nil {
		s, err := p.serverCPU()
		if err != nil {
			return t, err
		}
		t.ServerCPU = s - p.serverStart
	}
	return t, nil
}

// perSecond is n over d, 0 for no time.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// closedLoop runs workers goroutines, each calling step(w) until step
// returns false, ctx ends or deadline passes (a zero deadline: only step
// and ctx end it).
func closedLoop(ctx context.Context, workers int, deadline time.Time, step func(w int) bool) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)) {
				if !step(w) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// orDefault sets *p to v when *p is zero or negative (an unset option).
func orDefault[T int | int64 | float64 | time.Duration](p *T, v T) {
	if *p <= 0 {
		*p = v
	}
}

// labelOr sets *p to v when it is empty.
func labelOr(p *string, v string) {
	if *p == "" {
		*p = v
	}
}
