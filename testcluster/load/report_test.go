package load

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func stormRun(perSecond float64, p50, p99 time.Duration, cpu time.Duration) Run {
	return LoginStormResult{
		LoginsPerSecond: perSecond,
		Latency:         LatencySummary{Count: 10, P50: p50, P99: p99, Max: p99},
		ClientCPU:       cpu,
	}.Run()
}

func TestReportMetrics(t *testing.T) {
	r := Report{Scenario: "B2", Label: "B2 ed25519 tcp", Command: "palaver bench b2", Runs: []Run{
		stormRun(6000, 4*time.Millisecond, 20*time.Millisecond, 2*time.Second),
		stormRun(5000, 5*time.Millisecond, 30*time.Millisecond, 3*time.Second),
		stormRun(7000, 3*time.Millisecond, 10*time.Millisecond, 1*time.Second),
	}}
	metrics := r.Metrics()
	if len(metrics) != 3 || metrics[0].Name != "logins/s" || metrics[1].Name != "login p99" || metrics[2].Name != "failed logins" {
		t.Fatalf("metrics = %+v", metrics)
	}
	rate := metrics[0]
	if rate.Summary != (Summary{Median: 6000, Min: 5000, Max: 7000, N: 3}) {
		t.Errorf("logins/s summary = %+v", rate.Summary)
	}
	if rate.P50 == nil || rate.P50.Median != 4 || rate.P99 == nil || rate.P99.Median != 20 || rate.P99.Max != 30 {
		t.Errorf("latency summaries p50 %+v p99 %+v", rate.P50, rate.P99)
	}
	if metrics[1].P50 != nil {
		t.Error("a metric without latencies has a p50")
	}
	if cpu := r.ClientCPU(); cpu != (Summary{Median: 2, Min: 1, Max: 3, N: 3}) {
		t.Errorf("client CPU = %+v", cpu)
	}
}

func TestWriteTable(t *testing.T) {
	reports := []Report{
		{Scenario: "B1", Label: "B1 tcp N=20", Command: "palaver bench b1 --clients 20", Runs: []Run{
			IdleResult{Held: 20, RSSBeforeKB: 1000, RSSAfterKB: 1200, KBPerConnection: 10, Settled: false, ClientCPU: time.Second}.Run(),
		}},
		{Scenario: "B2", Label: "B2 ed25519 tcp", Command: "palaver bench b2", Runs: []Run{
			stormRun(6000, 4*time.Millisecond, 20*time.Millisecond, 2*time.Second),
		}},
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, reports); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"SCENARIO", "B1 tcp N=20", "server RSS per connection (KB)", "10–10",
		"B2 ed25519 tcp", "logins/s", "6000–6000", "4 ms", "20 ms", "2s (2–2)",
		"B1 tcp N=20: palaver bench b1 --clients 20", "still rising",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	reports := []Report{{Scenario: "B2", Label: "B2", Command: "palaver bench b2", Runs: []Run{
		stormRun(6000, 4*time.Millisecond, 20*time.Millisecond, 2*time.Second),
		stormRun(8000, 2*time.Millisecond, 10*time.Millisecond, 4*time.Second),
	}}}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, reports); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Reports []struct {
			Scenario string          `json:"scenario"`
			Command  string          `json:"command"`
			Runs     []Run           `json:"runs"`
			Metrics  []MetricSummary `json:"metrics"`
			CPU      Summary         `json:"client_cpu_seconds"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(buf.Bytes(), &decoded); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, buf.String())
	}
	got := decoded.Reports[0]
	if got.Scenario != "B2" || got.Command != "palaver bench b2" || len(got.Runs) != 2 {
		t.Errorf("decoded = %+v", got)
	}
	if got.Metrics[0].Median != 7000 || got.Metrics[0].Min != 6000 || got.CPU.Median != 3 {
		t.Errorf("metrics %+v cpu %+v", got.Metrics[0], got.CPU)
	}
}

func TestFormatNumber(t *testing.T) {
	tests := map[float64]string{0: "0", 6123.4: "6123", 123.45: "123.5", 9.876: "9.88", 0.1234: "0.123", 0.5: "0.5", 12: "12"}
	for in, want := range tests {
		if got := formatNumber(in); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", in, got, want)
		}
	}
}
