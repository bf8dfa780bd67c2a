package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Run converts a B3, B4 or B11 result into a report run: the rate of the
// fastest step that passed (deliveries/s, or acknowledged messages/s for
// B11) with that step's latency, and one note per step.
func (r FanoutResult) Run() Run {
	name, unit := "deliveries/s", ""
	if r.Acks {
		name = "acked messages/s"
	}
	name += fmt.Sprintf(" at p99 ≤ %s, all", r.P99Limit)
	run := Run{Detail: r}
	best := Measurement{Name: name, Unit: unit}
	if r.Best >= 0 {
		s := r.Steps[r.Best]
		best.Value, best.Latency = s.DeliveriesPerSecond, &s.Latency
		if r.Acks {
			best.Value, best.Latency = s.AcksPerSecond, &s.Echo
		}
	}
	run.Measurements = append(run.Measurements, best)
	var cpu, serverCPU, elapsed time.Duration
	for i, s := range r.Steps {
		cpu += s.ClientCPU
		serverCPU += s.ServerCPU
		elapsed += s.Elapsed
		run.Notes = append(run.Notes, s.note(i, r.Acks))
	}
	if last := len(r.Steps) - 1; last >= 0 {
		s := r.Steps[last]
		peak := Measurement{Name: "last step: deliveries/s", Value: s.DeliveriesPerSecond, Latency: &s.Latency}
		if r.Acks {
			peak = Measurement{Name: "last step: acked/s", Value: s.AcksPerSecond, Latency: &s.Echo}
		}
		run.Measurements = append(run.Measurements, peak)
	}
	if serverCPU > 0 && elapsed > 0 {
		run.Measurements = append(run.Measurements, Measurement{Name: "server CPU over the steps", Unit: "cores", Value: serverCPU.Seconds() / elapsed.Seconds()})
	}
	run.Measurements = append(run.Measurements, Measurement{Name: "members dropped", Value: float64(r.Dropped)})
	run.ClientCPU = cpu
	if r.Best < 0 {
		run.Notes = append(run.Notes, "no step passed")
	}
	if r.Fixed {
		passed := 0
		for _, s := range r.Steps {
			if s.Passed {
				passed++
			}
		}
		run.Notes = append(run.Notes, fmt.Sprintf("fixed rates: %d of %d steps passed", passed, len(r.Steps)))
	}
	if r.Unknown > 0 || len(r.FirstFails) > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d unmatched PRIVMSGs; first refusals: %s", r.Unknown, strings.Join(r.FirstFails, " | ")))
	}
	return run
}

func (s FanoutStep) note(i int, acks bool) string {
	verdict := "passed"
	if !s.Passed {
		verdict = "failed: " + s.Why
	}
	if acks {
		return fmt.Sprintf("step %d %.0f msg/s: sent %.0f/s, %d/%d acked = %.0f/s, echo p50 %s p99 %s, client CPU %.2fs; %s",
			i+1, s.Rate, s.SendRate, s.Acked, s.Sent-s.Failed, s.AcksPerSecond, roundMs(s.Echo.P50), roundMs(s.Echo.P99), s.ClientCPU.Seconds(), verdict)
	}
	return fmt.Sprintf("step %d %.0f msg/s: sent %.0f/s, %d/%d delivered = %.0f/s, p50 %s p99 %s, drain %s, client CPU %.2fs; %s",
		i+1, s.Rate, s.SendRate, s.Delivered, s.Expected, s.DeliveriesPerSecond, roundMs(s.Latency.P50), roundMs(s.Latency.P99),
		roundMs(s.Drain), s.ClientCPU.Seconds(), verdict)
}

func roundMs(d time.Duration) string { return fmt.Sprintf("%.1fms", millis(d)) }

// Run converts a B5 result into a report run.
func (r JoinStormResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "time to the last NAMES", Unit: "s", Value: r.Total.Seconds(), Latency: &lat},
			{Name: "joined", Value: float64(r.Joined)},
			{Name: "killed", Value: float64(r.Killed)},
			{Name: "FAIL JOIN", Value: float64(r.Failed)},
			{Name: "lines read", Value: float64(r.Lines)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if r.ServerCPU > 0 && r.Total > 0 {
		run.Measurements = append(run.Measurements, Measurement{Name: "server CPU", Unit: "s", Value: r.ServerCPU.Seconds()})
	}
	if r.Joined < r.Clients {
		run.Notes = append(run.Notes, fmt.Sprintf("%d of %d clients never got their NAMES", r.Clients-r.Joined, r.Clients))
	}
	if len(r.FirstErrors) > 0 {
		run.Notes = append(run.Notes, "first kills: "+strings.Join(r.FirstErrors, " | "))
	}
	if len(r.FirstFails) > 0 {
		run.Notes = append(run.Notes, "first FAIL JOIN: "+strings.Join(r.FirstFails, " | "))
	}
	if !r.Success {
		run.Notes = append(run.Notes, fmt.Sprintf("NOT A SUCCESS: %d/%d got their NAMES, %d killed, %d answered FAIL JOIN", r.Joined, r.Clients, r.Killed, r.Failed))
	}
	return run
}

// Run converts a B14 result into a report run.
func (r DeliveryResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "delivered / owed", Unit: "%", Value: 100 * r.Completeness(), Latency: &lat},
			{Name: "lost", Value: float64(r.Lost)},
			{Name: "duplicates", Value: float64(r.Duplicates)},
			{Name: "acked", Value: float64(r.Acked)},
			{Name: "restart to serving", Unit: "s", Value: r.Restart.Seconds()},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
		Notes: []string{fmt.Sprintf("killed %s (%s) at %.1fs, restarted at %.1fs, %d users reconnected; %d sent, %d acked, %d/%d owed deliveries",
			r.Killed, r.Role, r.KilledAt.Seconds(), r.RestartedAt.Seconds(), r.Reconnected, r.Sent, r.Acked, r.Delivered, r.Owed)},
	}
	run.Notes = append(run.Notes, fmt.Sprintf("%d owed deliveries came only from the reconnected clients' CHATHISTORY catch-up (not timed); %d messages read both live and from history (removed by msgid, not duplicates)", r.FromHistory, r.Overlap))
	if r.Early > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d messages sent before a connection's JOIN completed reached it live afterwards (not timed)", r.Early))
	}
	if r.Details != nil {
		for _, k := range slices.Sorted(maps.Keys(r.Details.Classes)) {
			run.Notes = append(run.Notes, fmt.Sprintf("%d × %s", r.Details.Classes[k], k))
		}
	}
	if r.Refusals > 0 || r.Unknown > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d refusals, %d unmatched PRIVMSGs; first: %s", r.Refusals, r.Unknown, strings.Join(r.FirstFails, " | ")))
	}
	return run
}
