package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/testcluster/load"
)

// defineRampFlags adds the flags of a rising rate to fs.
func defineRampFlags(fs *flag.FlagSet, r *load.RampConfig, startRate float64, steps int, p99 time.Duration) {
	fs.Float64Var(&r.StartRate, "start-rate", startRate, "messages per second of the first step")
	fs.Float64Var(&r.Factor, "factor", 2, "rate multiplier from one step to the next")
	fs.IntVar(&r.Steps, "steps", steps, "steps at most; the ramp also stops after the first step that fails")
	fs.DurationVar(&r.StepDuration, "step-duration", 5*time.Second, "how long each step sends")
	fs.DurationVar(&r.P99Limit, "p99", p99, "a step passes when its p99 is at most this and every message arrived")
	fs.DurationVar(&r.Drain, "drain", 5*time.Second, "bound on the wait after a step for the messages in flight")
	fs.Func("rates", "comma-separated fixed rates (messages/s), one step each, all run whatever the steps before did; replaces --start-rate, --factor and --steps",
		func(v string) error {
			rates, err := parseRates(v)
			r.Rates = rates
			return err
		})
}

// parseRates reads a comma-separated list of positive rates.
func parseRates(v string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(v, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
			return nil, fmt.Errorf("rate %q: want a positive number of messages per second", f)
		}
		out = append(out, rate)
	}
	return out, nil
}

func validRamp(r load.RampConfig) error {
	if r.StartRate <= 0 || r.Factor < 1 || r.Steps < 1 || r.StepDuration <= 0 || r.P99Limit <= 0 || r.Drain <= 0 {
		return errors.New("--start-rate, --step-duration, --p99 and --drain must be positive, --factor at least 1 and --steps at least 1")
	}
	return nil
}

// defineFanoutBench defines B3 (one big channel, one sender), B4 (many
// small channels, random senders) and B11 (acknowledged messages).
func defineFanoutBench(id string, base load.FanoutConfig, startRate float64, steps int, p99 time.Duration) func(fs *flag.FlagSet) *benchCase {
	return func(fs *flag.FlagSet) *benchCase {
		cfg := base
		clients := base.Channels * base.ChannelSize
		if id == "B3" {
			fs.IntVar(&cfg.ChannelSize, "members", base.ChannelSize, "members of the channel, the sender included")
		} else {
			fs.IntVar(&clients, "clients", clients, "clients, split into channels of --channel-size")
			fs.IntVar(&cfg.ChannelSize, "channel-size", base.ChannelSize, "members per channel")
		}
		fs.IntVar(&cfg.BodyBytes, "body-bytes", 100, "message text length")
		fs.DurationVar(&cfg.Tick, "tick", 5*time.Millisecond, "how often the pacer writes the messages that fell due")
		fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 64, "clients being set up at once")
		fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "bound on one client's registration and JOIN")
		defineRampFlags(fs, &cfg.Ramp, startRate, steps, p99)
		return &benchCase{
			label: func(t load.Target) string {
				return fmt.Sprintf("%s %s %dx%d", id, t.Transport, cfg.Channels, cfg.ChannelSize)
			},
			validate: func() error {
				if id == "B3" {
					clients = cfg.ChannelSize // one channel: every client is a member
				}
				if cfg.ChannelSize < 1 || clients < cfg.ChannelSize || cfg.BodyBytes < 16 || cfg.Tick <= 0 {
					return errors.New("--members/--channel-size must be at least 1 (and at most --clients), --body-bytes at least 16 and --tick positive")
				}
				if id != "B3" {
					cfg.Channels = clients / cfg.ChannelSize
				}
				if limit, err := load.FDLimit(); err == nil && uint64(cfg.Channels*cfg.ChannelSize)+64 > limit {
					return fmt.Errorf("%d clients need more open files than the limit %d allows", cfg.Channels*cfg.ChannelSize, limit)
				}
				return validRamp(cfg.Ramp)
			},
			run: func(ctx context.Context, env benchEnv) (load.Run, error) {
				c := cfg
				c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
				res, err := load.RunFanout(ctx, env.target, c)
				if err != nil {
					return load.Run{}, err
				}
				return res.Run(), nil
			},
		}
	}
}

func defineJoinStormBench(fs *flag.FlagSet) *benchCase {
	var cfg load.JoinStormConfig
	fs.IntVar(&cfg.Clients, "clients", 5000, "clients that JOIN the channel back to back")
	fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 64, "connections being registered at once")
	fs.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "bound on one registration and on the whole storm")
	return &benchCase{
		label: func(t load.Target) string { return fmt.Sprintf("B5 %s N=%d", t.Transport, cfg.Clients) },
		validate: func() error {
			if cfg.Clients < 1 || cfg.SetupConcurrency < 1 || cfg.Timeout <= 0 {
				return errors.New("--clients and --setup-concurrency must be at least 1 and --timeout positive")
			}
			if limit, err := load.FDLimit(); err == nil && uint64(cfg.Clients)+64 > limit {
				return fmt.Errorf("--clients %d needs more open files than the limit %d allows", cfg.Clients, limit)
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
			res, err := load.RunJoinStorm(ctx, env.target, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

func defineDeliveryBench(fs *flag.FlagSet) *benchCase {
	var cfg load.DeliveryConfig
	fs.IntVar(&cfg.Users, "users", 1000, "users, spread over the nodes and channels")
	fs.IntVar(&cfg.Channels, "channels", 5, "channels")
	fs.Float64Var(&cfg.Rate, "rate", 100, "messages per second, all senders together")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long to send")
	fs.IntVar(&cfg.BodyBytes, "body-bytes", 100, "message text length")
	fs.DurationVar(&cfg.KillAfter, "kill-after", 5*time.Second, "when to SIGKILL the node, after sending starts")
	fs.DurationVar(&cfg.RestartAfter, "restart-after", 5*time.Second, "how long the node stays down")
	fs.BoolVar(&cfg.KillLeader, "kill-leader", false, "kill the Raft leader instead of a follower")
	fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 32, "clients being set up at once")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "bound on each setup step, the restart and the final drain")
	fs.BoolVar(&cfg.JoinReplay, "join-replay", false, "clients without draft/chathistory: a reconnected client reads only the JOIN replay, no CHATHISTORY catch-up")
	fs.BoolVar(&cfg.Details, "details", false, "print every lost, duplicated and late delivery (which message, member, node, when)")
	return &benchCase{
		cluster:   true,
		needsKill: true,
		label: func(load.Target) string {
			return fmt.Sprintf("B14 users=%d channels=%d %.0f/s", cfg.Users, cfg.Channels, cfg.Rate)
		},
		validate: func() error {
			if cfg.Users < 1 || cfg.Channels < 1 || cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.BodyBytes < 16 {
				return errors.New("--users and --channels must be at least 1, --body-bytes at least 16, --rate and --duration positive")
			}
			if cfg.KillAfter <= 0 || cfg.RestartAfter <= 0 || cfg.KillAfter+cfg.RestartAfter >= cfg.Duration {
				return errors.New("--kill-after and --restart-after must be positive and end before --duration")
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label = env.progress, env.label
			res, err := load.RunDelivery(ctx, env.cluster, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

// defineRESTLoadBench defines B12 (history pages) and B13 (searches while
// messages are written).
func defineRESTLoadBench(kind load.RESTLoadKind, id string) func(fs *flag.FlagSet) *benchCase {
	return func(fs *flag.FlagSet) *benchCase {
		cfg := load.RESTLoadConfig{Kind: kind}
		fs.IntVar(&cfg.Messages, "messages", 100_000, "messages stored through IRC before the load (the design's figure is 1,000,000)")
		fs.IntVar(&cfg.Channels, "channels", 64, "channels the messages are spread over, one writing guest each")
		fs.Float64Var(&cfg.SeedRate, "seed-rate", 5000, "messages per second while seeding")
		fs.IntVar(&cfg.Concurrency, "concurrency", 64, "HTTP requests in flight (one keep-alive connection each)")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send requests")
		writeRate := 0.0
		if kind == load.RESTSearch {
			writeRate = 1000
		}
		fs.Float64Var(&cfg.WriteRate, "write-rate", writeRate, "messages per second written during the load")
		fs.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "bound on setup steps, the seeding drain and one request")
		return &benchCase{
			label: func(load.Target) string {
				return fmt.Sprintf("%s %s c=%d M=%d w=%.0f/s", id, kind, cfg.Concurrency, cfg.Messages, cfg.WriteRate)
			},
			validate: func() error {
				if cfg.Messages < 1 || cfg.Channels < 1 || cfg.SeedRate <= 0 || cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.WriteRate < 0 {
					return errors.New("--messages, --channels and --concurrency must be at least 1, --seed-rate and --duration positive, --write-rate not negative")
				}
				return nil
			},
			run: func(ctx context.Context, env benchEnv) (load.Run, error) {
				c := cfg
				c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
				if c.WriteRate == 0 {
					c.WriteRate = -1 // none
				}
				res, err := load.RunRESTLoad(ctx, env.target, c)
				if err != nil {
					return load.Run{}, err
				}
				return res.Run(), nil
			},
		}
	}
}
