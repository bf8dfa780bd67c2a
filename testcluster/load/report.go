package load

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Measurement is one number a run produced.
type Measurement struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Latency, when set, is the latency distribution behind the value
	// (for a throughput); the table shows its p50 and p99.
	Latency *LatencySummary `json:"latency,omitempty"`
}

// Run is the outcome of one run of a scenario.
type Run struct {
	Measurements []Measurement `json:"measurements"`
	ClientCPU    time.Duration `json:"client_cpu_ns"` // the load client's user+system CPU during the measured part
	Notes        []string      `json:"notes,omitempty"`
	Detail       any           `json:"detail,omitempty"` // the scenario's full result
}

// Report gathers the runs of one scenario.
type Report struct {
	Scenario string `json:"scenario"` // "B1"
	Label    string `json:"label"`    // "B1 tcp N=2000"
	Command  string `json:"command"`  // the exact command line
	Runs     []Run  `json:"runs"`
}

// MetricSummary is one metric over the runs of a report.
type MetricSummary struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"` // one per run
	Summary
	// P50 and P99 summarize the runs' latency percentiles in
	// milliseconds, when the metric carries latencies.
	P50 *Summary `json:"p50_ms,omitempty"`
	P99 *Summary `json:"p99_ms,omitempty"`
}

// Metrics summarizes every metric of the report, in the order of their
// first appearance.
func (r Report) Metrics() []MetricSummary {
	var order []string
	byName := map[string]*MetricSummary{}
	p50s, p99s := map[string][]float64{}, map[string][]float64{}
	for _, run := range r.Runs {
		for _, m := range run.Measurements {
			s, ok := byName[m.Name]
			if !ok {
				s = &MetricSummary{Name: m.Name, Unit: m.Unit}
				byName[m.Name] = s
				order = append(order, m.Name)
			}
			s.Values = append(s.Values, m.Value)
			if m.Latency != nil {
				p50s[m.Name] = append(p50s[m.Name], millis(m.Latency.P50))
				p99s[m.Name] = append(p99s[m.Name], millis(m.Latency.P99))
			}
		}
	}
	out := make([]MetricSummary, 0, len(order))
	for _, name := range order {
		s := byName[name]
		s.Summary = Summarize(s.Values)
		if v := p50s[name]; len(v) > 0 {
			p50, p99 := Summarize(v), Summarize(p99s[name])
			s.P50, s.P99 = &p50, &p99
		}
		out = append(out, *s)
	}
	return out
}

// ClientCPU summarizes the load client's CPU seconds over the runs.
func (r Report) ClientCPU() Summary {
	v := make([]float64, len(r.Runs))
	for i, run := range r.Runs {
		v[i] = run.ClientCPU.Seconds()
	}
	return Summarize(v)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteTable writes the reports as an aligned table: one row per metric
// with its median and spread (min–max) over the runs, the median p50 and
// p99 latency where the metric has them, and the load client's CPU
// (median and spread) on each report's first row. Each report's command
// and notes follow the table.
func WriteTable(w io.Writer, reports []Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMETRIC\tMEDIAN\tSPREAD (min–max)\tRUNS\tP50\tP99\tCLIENT CPU/RUN")
	for _, r := range reports {
		cpu := r.ClientCPU()
		for i, m := range r.Metrics() {
			p50, p99, cpuCol := "", "", ""
			if m.P50 != nil {
				p50, p99 = formatNumber(m.P50.Median)+" ms", formatNumber(m.P99.Median)+" ms"
			}
			if i == 0 {
				cpuCol = fmt.Sprintf("%ss (%s–%s)", formatNumber(cpu.Median), formatNumber(cpu.Min), formatNumber(cpu.Max))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s–%s\t%d\t%s\t%s\t%s\n", r.Label, metricName(m),
				formatNumber(m.Median), formatNumber(m.Min), formatNumber(m.Max), m.N, p50, p99, cpuCol)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("load: writing the table: %w", err)
	}
	for _, r := range reports {
		fmt.Fprintf(w, "\n%s: %s\n", r.Label, r.Command)
		for i, run := range r.Runs {
			for _, note := range run.Notes {
				fmt.Fprintf(w, "  run %d: %s\n", i+1, note)
			}
		}
	}
	return nil
}

func metricName(m MetricSummary) string {
	if m.Unit == "" {
		return m.Name
	}
	return m.Name + " (" + m.Unit + ")"
}

// formatNumber prints with about three significant digits after the
// point for small values and none for large ones.
func formatNumber(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "-"
	case a >= 1000 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// jsonReport is the machine-readable form of a Report.
type jsonReport struct {
	Report
	Metrics   []MetricSummary `json:"metrics"`
	ClientCPU Summary         `json:"client_cpu_seconds"`
}

// WriteJSON writes the reports, with their summaries, as one JSON object
// {"reports": [...]}.
func WriteJSON(w io.Writer, reports []Report) error {
	out := struct {
		Reports []jsonReport `json:"reports"`
	}{Reports: make([]jsonReport, len(reports))}
	for i, r := range reports {
		out.Reports[i] = jsonReport{Report: r, Metrics: r.Metrics(), ClientCPU: r.ClientCPU()}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("load: writing JSON: %w", err)
	}
	return nil
}

// Run converts a B1 result into a report run.
func (r IdleResult) Run() Run {
	run := Run{
		Measurements: []Measurement{
			{Name: "server RSS per connection", Unit: "KB", Value: r.KBPerConnection},
			{Name: "connections held", Value: float64(r.Held)},
			{Name: "server RSS growth", Unit: "MB", Value: float64(r.RSSAfterKB-r.RSSBeforeKB) / 1024},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if !r.Settled {
		run.Notes = append(run.Notes, "the server RSS was still rising at the settle deadline")
	}
	if r.SetupFailed > 0 || r.Dropped > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d connections failed to set up, %d dropped before the measurement; first error: %s",
			r.SetupFailed, r.Dropped, r.FirstError))
	}
	return run
}

// Run converts a B2 result into a report run.
func (r LoginStormResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "logins/s", Value: r.LoginsPerSecond, Latency: &lat},
			{Name: "login p99", Unit: "ms", Value: millis(r.Latency.P99)},
			{Name: "failed logins", Value: float64(r.Failed)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if r.ServerCPU > 0 && r.Elapsed > 0 {
		run.Measurements = append(run.Measurements, Measurement{
			Name: "server CPU", Unit: "cores", Value: r.ServerCPU.Seconds() / r.Elapsed.Seconds(),
		})
	}
	if r.Failed > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d of %d logins failed (%s); first: %s",
			r.Failed, r.Attempts, r.FailureKinds(), strings.Join(r.FirstErrors, " | ")))
	}
	if r.QuitTimeouts > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d connections were not closed by the server after QUIT within the timeout", r.QuitTimeouts))
	}
	return run
}
