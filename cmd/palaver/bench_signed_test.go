package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

func TestRunBenchSignedUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"B6 without channels", []string{"b6", "--channels", "0"}},
		{"B6 without a window", []string{"b6", "--window", "0"}},
		{"B6 without a duration", []string{"b6", "--duration", "0s"}},
		{"B7 without messages", []string{"b7", "--messages", "0"}},
		{"B7 without concurrency", []string{"b7", "--concurrency", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runBench(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
		})
	}
}

// TestRunBenchSignedScenarios runs B6 and B7 briefly against a node and
// checks that nothing was refused or lost.
func TestRunBenchSignedScenarios(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := nodetest.Start(t, nil)

	tests := []struct {
		args     []string
		scenario string
		zero     []string // metrics that must be 0 in every run
	}{
		{[]string{"b6", "--target", n.IRCAddr(), "--channels", "2", "--channel-size", "3", "--window", "4", "--duration", "200ms", "--runs", "1", "--json"},
			"B6", []string{"rejected (FAIL and refusals)", "unanswered", "deliveries missing"}},
		{[]string{"b7", "--target", n.IRCAddr(), "--http-url", "http://" + n.HTTPAddr(), "--messages", "10", "--concurrency", "4", "--duration", "200ms", "--runs", "1", "--json"},
			"B7", []string{"non-200", "not verdict valid", "request errors"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runBench(ctx, tt.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
			}
			var out struct {
				Reports []struct {
					Scenario string `json:"scenario"`
					Metrics  []struct {
						Name   string    `json:"name"`
						Values []float64 `json:"values"`
					} `json:"metrics"`
				} `json:"reports"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Reports) != 1 {
				t.Fatalf("output is not one JSON report: %v\n%s", err, stdout.String())
			}
			r := out.Reports[0]
			if r.Scenario != tt.scenario || len(r.Metrics) == 0 || r.Metrics[0].Values[0] <= 0 {
				t.Errorf("report %+v", r)
			}
			values := map[string]float64{}
			for _, m := range r.Metrics {
				values[m.Name] = m.Values[0]
			}
			for _, name := range tt.zero {
				if v, ok := values[name]; !ok || v != 0 {
					t.Errorf("%s = %v (present %t), want 0; stderr:\n%s", name, v, ok, stderr.String())
				}
			}
		})
	}
}
