package load

import (
	"fmt"
	"strings"
)

// Run converts a B6 result into a report run.
func (r SignedMessagesResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "verified messages accepted/s", Value: r.AcceptedPerSecond, Latency: &lat},
			{Name: "send→echo p99", Unit: "ms", Value: millis(r.Latency.P99)},
			{Name: "rejected (FAIL and refusals)", Value: float64(r.Rejected)},
			{Name: "unanswered", Value: float64(r.Unanswered)},
			{Name: "deliveries missing", Value: float64(r.Expected - r.Delivered)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if r.Elapsed > 0 {
		run.Measurements = append(run.Measurements,
			Measurement{Name: "client CPU", Unit: "cores", Value: r.ClientCPU.Seconds() / r.Elapsed.Seconds()},
			Measurement{Name: "client signing (wall time)", Unit: "cores", Value: r.SigningTime.Seconds() / r.Elapsed.Seconds()})
		if r.ServerCPU > 0 {
			run.Measurements = append(run.Measurements, Measurement{
				Name: "server CPU", Unit: "cores", Value: r.ServerCPU.Seconds() / r.Elapsed.Seconds(),
			})
		}
	}
	if r.Rejected > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d of %d signed messages refused (%s); first: %s",
			r.Rejected, r.Sent, r.RejectionKinds(), strings.Join(r.FirstRejections, " | ")))
	}
	if r.Unanswered > 0 || len(r.StreamErrors) > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d signed messages unanswered; sender errors: %s",
			r.Unanswered, strings.Join(r.StreamErrors, " | ")))
	}
	if r.ReadersSynced < r.Readers || r.Delivered != r.Expected {
		run.Notes = append(run.Notes, fmt.Sprintf("readers: %d of %d synced, %d of %d expected deliveries received",
			r.ReadersSynced, r.Readers, r.Delivered, r.Expected))
	}
	return run
}

// Run converts a B7 result into a report run.
func (r VerifyLoadResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "verify requests/s", Value: r.RequestsPerSecond, Latency: &lat},
			{Name: "verify p99", Unit: "ms", Value: millis(r.Latency.P99)},
			{Name: "non-200", Value: float64(r.Non200)},
			{Name: "not verdict valid", Value: float64(r.NotValid)},
			{Name: "request errors", Value: float64(r.Errors)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if r.Elapsed > 0 {
		run.Measurements = append(run.Measurements,
			Measurement{Name: "client CPU", Unit: "cores", Value: r.ClientCPU.Seconds() / r.Elapsed.Seconds()})
		if r.ServerCPU > 0 {
			run.Measurements = append(run.Measurements, Measurement{
				Name: "server CPU", Unit: "cores", Value: r.ServerCPU.Seconds() / r.Elapsed.Seconds(),
			})
		}
	}
	if r.Non200 > 0 || r.NotValid > 0 || r.Errors > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d non-200 (%s), %d not valid, %d errors of %d requests; first: %s",
			r.Non200, r.StatusKinds(), r.NotValid, r.Errors, r.Requests+r.Errors, strings.Join(r.FirstFails, " | ")))
	}
	return run
}
