package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrNoVmRSS reports a /proc/<pid>/status text without a usable VmRSS line
// (a kernel thread, a zombie, or not Linux).
var ErrNoVmRSS = errors.New("load: no VmRSS line in the process status")

// ReadRSS returns the resident set size of process pid in KiB, read from
// the VmRSS line of /proc/<pid>/status (Linux only).
func ReadRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("load: reading the RSS of process %d: %w", pid, err)
	}
	defer f.Close()
	kb, err := ParseVmRSS(f)
	if err != nil {
		return 0, fmt.Errorf("load: process %d: %w", pid, err)
	}
	return kb, nil
}

// ParseVmRSS extracts the VmRSS value, in KiB, from the text of a
// /proc/<pid>/status file ("VmRSS:\t   12345 kB").
func ParseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%w: malformed line %q", ErrNoVmRSS, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("%w: malformed value %q", ErrNoVmRSS, fields[0])
		}
		return kb, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("load: reading the process status: %w", err)
	}
	return 0, ErrNoVmRSS
}

// SettleOptions say when a resident set size counts as settled.
type SettleOptions struct {
	Interval time.Duration // time between samples; default 250 ms
	// QuietSamples is how many samples in a row must show no rise;
	// default 12 (3 s at the default interval).
	QuietSamples int
	Tolerance    int64         // KiB the RSS may grow by since its last rise and still count as not rising; default 256
	Timeout      time.Duration // give up after this long; default 60 s
}

func (o SettleOptions) withDefaults() SettleOptions {
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.QuietSamples <= 0 {
		o.QuietSamples = 12
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 256
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	return o
}

// Settled is the outcome of WaitRSSSettled.
type Settled struct {
	KB      int64         // the last sample
	Settled bool          // false when Timeout passed while the RSS was still rising
	Waited  time.Duration // time from the first sample to the answer
}

// WaitRSSSettled samples read (usually a ReadRSS closure) every Interval
// until QuietSamples samples in a row have not grown by more than
// Tolerance over the value at the last rise, or until Timeout. Comparing
// with the value at the last rise, not with the previous sample, catches a
// slow steady climb. A Go server's RSS keeps rising for a while after a
// burst (heap growth, goroutine stacks, lazily touched pages), so a reading
// taken right after the last client connected would undercount.
func WaitRSSSettled(ctx context.Context, read func() (int64, error), opts SettleOptions) (Settled, error) {
	opts = opts.withDefaults()
	start := time.Now()
	base, err := read()
	if err != nil {
		return Settled{}, err
	}
	last, quiet := base, 0
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
	for {
		if quiet >= opts.QuietSamples {
			return Settled{KB: last, Settled: true, Waited: time.Since(start)}, nil
		}
		if time.Since(start) >= opts.Timeout {
			return Settled{KB: last, Settled: false, Waited: time.Since(start)}, nil
		}
		select {
		case <-ctx.Done():
			return Settled{KB: last, Waited: time.Since(start)}, ctx.Err()
		case <-ticker.C:
		}
		if last, err = read(); err != nil {
			return Settled{}, err
		}
		if last > base+opts.Tolerance {
			base, quiet = last, 0
		} else {
			quiet++
		}
	}
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat, fixed at 100
// by the Linux ABI whatever the kernel's internal tick rate.
const userHZ = 100

// ErrBadStat reports a /proc/<pid>/stat text that could not be parsed.
var ErrBadStat = errors.New("load: malformed process stat")

// ReadProcessCPU returns the CPU time (user plus system, all threads) that
// process pid has used so far, from /proc/<pid>/stat (Linux only).
func ReadProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("load: reading the CPU time of process %d: %w", pid, err)
	}
	d, err := ParseStatCPU(string(data))
	if err != nil {
		return 0, fmt.Errorf("load: process %d: %w", pid, err)
	}
	return d, nil
}

// ParseStatCPU extracts utime + stime (fields 14 and 15) from the text of
// a /proc/<pid>/stat file. The command name (field 2) is parenthesized and
// may itself hold spaces and parentheses, so fields are counted from the
// last ')'.
func ParseStatCPU(stat string) (time.Duration, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("%w: no command name", ErrBadStat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so utime (14) and stime (15) are at 11 and 12.
	if len(fields) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the command name", ErrBadStat, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(time.Second)/2 {
			return 0, fmt.Errorf("%w: CPU time %q", ErrBadStat, f)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
