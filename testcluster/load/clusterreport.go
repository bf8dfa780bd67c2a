package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Run converts a B8, B9 or B10 result into a report run.
func (r ClusterChangesResult) Run() Run {
	obs := r.Observe
	run := Run{
		Measurements: []Measurement{
			{Name: "changes/s", Value: r.ChangesPerSecond, Latency: &obs},
			{Name: "observe p50", Unit: "ms", Value: millis(r.Observe.P50)},
			{Name: "observe p99", Unit: "ms", Value: millis(r.Observe.P99)},
			{Name: "ack p50", Unit: "ms", Value: millis(r.Ack.P50)},
			{Name: "ack p99", Unit: "ms", Value: millis(r.Ack.P99)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	for _, k := range slices.Sorted(maps.Keys(r.ObserveByKind)) {
		l := r.ObserveByKind[k]
		run.Measurements = append(run.Measurements,
			Measurement{Name: string(k) + " observe p50", Unit: "ms", Value: millis(l.P50)},
			Measurement{Name: string(k) + " observe p99", Unit: "ms", Value: millis(l.P99)})
	}
	if k := r.Kill; k != nil {
		recovery := Measurement{Name: "recovery after the kill", Unit: "ms", Value: millis(k.Recovery)}
		if !k.Recovered {
			recovery.Value = -1
		}
		run.Measurements = append(run.Measurements, recovery,
			Measurement{Name: "first sighting after the kill", Unit: "ms", Value: millis(k.FirstSighting)},
			Measurement{Name: "new leader after the kill", Unit: "ms", Value: millis(k.Elected)},
			Measurement{Name: "longest gap between sightings", Unit: "ms", Value: millis(k.MaxGap)})
	}
	run.Measurements = append(run.Measurements,
		Measurement{Name: "acknowledged changes lost", Value: float64(r.Lost)},
		Measurement{Name: "failed or unanswered changes", Value: float64(r.Failed + r.Unanswered)},
		Measurement{Name: "elections", Value: float64(r.Elections)})
	if len(r.ServerCPU) > 0 {
		run.Measurements = append(run.Measurements, Measurement{Name: "server CPU (all nodes)", Unit: "cores", Value: totalCores(r.ServerCPU)})
	}
	run.Notes = append(run.Notes, fmt.Sprintf("leader %s; %s; %d sent, %d acked, %d observed",
		r.Leader, placementsText(r.Placements), r.Sent, r.Acked, r.Observed))
	if k := r.Kill; k != nil {
		note := fmt.Sprintf("killed %s (term %d) at %.2fs; %s leads in term %d after %.0f ms", k.Node, k.Term, k.At.Seconds(), k.NewLeader, k.NewTerm, millis(k.Elected))
		if !k.Recovered {
			note += "; no change sent after the kill was observed"
		}
		if k.Error != "" {
			note += "; " + k.Error
		}
		run.Notes = append(run.Notes, note)
	}
	if r.Failed > 0 || r.Unanswered > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d refused (%s), %d unanswered, %d of them committed anyway", r.Failed, countsText(r.Refusals), r.Unanswered, r.CommittedUnacked))
	}
	if r.Lost > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d acknowledged changes lost, first: %s", r.Lost, strings.Join(r.LostKeys, ", ")))
	}
	if r.Unverified > 0 || len(r.LossCheckErrors) > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("loss check incomplete for %d of %d writers (%d acknowledged changes unverified): %s",
			r.Writers-r.LossChecked, r.Writers, r.Unverified, strings.Join(r.LossCheckErrors, " | ")))
	}
	if r.Duplicates > 0 || r.UnknownObservations > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d duplicate sightings, %d sightings of unknown changes", r.Duplicates, r.UnknownObservations))
	}
	if len(r.WriterErrors) > 0 {
		run.Notes = append(run.Notes, "writers stopped early: "+strings.Join(r.WriterErrors, " | "))
	}
	if len(r.ServerCPU) > 0 {
		run.Notes = append(run.Notes, "server CPU: "+cpuText(r.ServerCPU))
	}
	return run
}

// Run converts a B15 result into a report run.
func (r CrossNodeResult) Run() Run {
	lat := r.Latency
	delivered := 0.0
	if r.Expected > 0 {
		delivered = 100 * float64(r.Delivered) / float64(r.Expected)
	}
	run := Run{
		Measurements: []Measurement{
			{Name: "sent msgs/s", Value: r.SendRate, Latency: &lat},
			{Name: "cross-node p50", Unit: "ms", Value: millis(r.Latency.P50)},
			{Name: "cross-node p99", Unit: "ms", Value: millis(r.Latency.P99)},
			{Name: "cross-node max", Unit: "ms", Value: millis(r.Latency.Max)},
			{Name: "origin echo p50", Unit: "ms", Value: millis(r.OriginEcho.P50)},
			{Name: "origin echo p99", Unit: "ms", Value: millis(r.OriginEcho.P99)},
			{Name: "delivered", Unit: "%", Value: delivered},
			{Name: "duplicates", Value: float64(r.Duplicates)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if len(r.ServerCPU) > 0 {
		run.Measurements = append(run.Measurements, Measurement{Name: "server CPU (all nodes)", Unit: "cores", Value: totalCores(r.ServerCPU)})
	}
	run.Notes = append(run.Notes, fmt.Sprintf("leader %s; %s; %d sent, %d/%d delivered, drain %.0f ms",
		r.Leader, placementsText(r.Placements), r.Sent, r.Delivered, r.Expected, millis(r.Drain)))
	if r.Refusals > 0 || r.Unknown > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d refusals (%s), %d unknown PRIVMSGs", r.Refusals, strings.Join(r.FirstRefusals, " | "), r.Unknown))
	}
	if len(r.ServerCPU) > 0 {
		run.Notes = append(run.Notes, "server CPU: "+cpuText(r.ServerCPU))
	}
	return run
}

func cpuText(shares []NodeCPUShare) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s (%s) %.2f cores", s.Node, s.Role, s.Cores)
	}
	return strings.Join(parts, ", ")
}

func countsText(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
