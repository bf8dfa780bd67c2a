package load

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"typical", "Name:\tpalaver\nVmPeak:\t  812345 kB\nVmRSS:\t   12345 kB\nRssAnon:\t 1000 kB\n", 12345, false},
		{"zero", "VmRSS:\t0 kB\n", 0, false},
		{"missing (kernel thread)", "Name:\tkthreadd\nState:\tS (sleeping)\n", 0, true},
		{"wrong unit", "VmRSS:\t12 MB\n", 0, true},
		{"not a number", "VmRSS:\tlots kB\n", 0, true},
		{"negative", "VmRSS:\t-5 kB\n", 0, true},
		{"empty", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVmRSS(strings.NewReader(tt.status))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseVmRSS error = %v, wantErr %t", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrNoVmRSS) {
				t.Errorf("error %v does not wrap ErrNoVmRSS", err)
			}
			if got != tt.want {
				t.Errorf("ParseVmRSS = %d, want %d", got, tt.want)
			}
		})
	}
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add("VmRSS:\t   12345 kB\n")
	f.Add("Name:\tx\nVmRSS:\t1 kB")
	f.Add("VmRSS:")
	f.Add("VmRSS: 99999999999999999999999 kB\n")
	f.Fuzz(func(t *testing.T, status string) {
		kb, err := ParseVmRSS(strings.NewReader(status))
		if err == nil && kb < 0 {
			t.Errorf("negative RSS %d without an error", kb)
		}
	})
}

func TestReadRSSOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system")
	}
	kb, err := ReadRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if kb <= 0 {
		t.Errorf("ReadRSS = %d KB, want a positive size", kb)
	}
}

// sequence returns a reader that yields values in turn and then repeats
// the last one.
func sequence(values ...int64) func() (int64, error) {
	i := 0
	return func() (int64, error) {
		v := values[min(i, len(values)-1)]
		i++
		return v, nil
	}
}

func TestWaitRSSSettled(t *testing.T) {
	fast := SettleOptions{Interval: time.Millisecond, QuietSamples: 3, Tolerance: 10, Timeout: time.Minute}
	tests := []struct {
		name        string
		read        func() (int64, error)
		opts        SettleOptions
		wantKB      int64
		wantSettled bool
	}{
		{"flat settles on the first value", sequence(100), fast, 100, true},
		{"settles at the top of a climb", sequence(100, 200, 300, 400, 400), fast, 400, true},
		{"small wobble counts as settled", sequence(100, 105, 98, 109), fast, 109, true},
		{"never-ending climb hits the timeout", func() func() (int64, error) {
			v := int64(0)
			return func() (int64, error) { v += 100; return v, nil }
		}(), SettleOptions{Interval: time.Millisecond, QuietSamples: 1 << 30, Tolerance: 10, Timeout: 20 * time.Millisecond}, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WaitRSSSettled(context.Background(), tt.read, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Settled != tt.wantSettled {
				t.Errorf("Settled = %t, want %t", got.Settled, tt.wantSettled)
			}
			if tt.wantKB >= 0 && got.KB != tt.wantKB {
				t.Errorf("KB = %d, want %d", got.KB, tt.wantKB)
			}
		})
	}
}

func TestWaitRSSSettledStopsOnReadErrorAndCancel(t *testing.T) {
	boom := errors.New("boom")
	if _, err := WaitRSSSettled(context.Background(), func() (int64, error) { return 0, boom }, SettleOptions{}); !errors.Is(err, boom) {
		t.Errorf("error = %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := WaitRSSSettled(ctx, sequence(1), SettleOptions{Interval: time.Millisecond, QuietSamples: 1 << 30, Timeout: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"typical", "1234 (palaver) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 125 0 0 20 0 9 0 100 0 0", 3750 * time.Millisecond, false},
		{"name with spaces and parens", "77 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 1 2 0 0", 30 * time.Millisecond, false},
		{"no name", "1234 palaver S 1", 0, true},
		{"too short", "1 (x) S 1 2 3", 0, true},
		{"not a number", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u s", 0, true},
		{"negative", "1 (x) S 1 2 3 4 5 6 7 8 9 10 -1 2", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatCPU(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseStatCPU error = %v, wantErr %t", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrBadStat) {
				t.Errorf("error %v does not wrap ErrBadStat", err)
			}
			if got != tt.want {
				t.Errorf("ParseStatCPU = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add("1234 (palaver) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 125 0 0 20 0 9 0 100 0 0")
	f.Add("1 ()) S 1 2 3 4 5 6 7 8 9 10 99999999999999999 1")
	f.Add(")")
	f.Fuzz(func(t *testing.T, stat string) {
		d, err := ParseStatCPU(stat)
		if err == nil && d < 0 {
			t.Errorf("negative CPU time %v without an error", d)
		}
	})
}

func TestReadProcessCPUOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	if _, err := ReadProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}
