package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/testcluster/load"
)

// benchScenario is one scenario `palaver bench` can run.
type benchScenario struct {
	name    string // command-line name, e.g. "b1"
	id      string // name in the design's table, e.g. "B1"
	summary string
	// define adds the scenario's own flags to fs and returns the scenario,
	// usable once fs is parsed.
	define func(fs *flag.FlagSet) *benchCase
}

// benchCase is a scenario configured by its flags.
type benchCase struct {
	label     func(t load.Target) string // e.g. "B1 tcp N=2000"
	needsRSS  bool                       // reads the server's resident memory
	cluster   bool                       // runs against a cluster (env.cluster)
	needsKill bool                       // kills cluster nodes: needs --spawn-cluster
	validate  func() error
	run       func(ctx context.Context, env benchEnv) (load.Run, error)
}

// benchEnv is what one run of a scenario works against.
type benchEnv struct {
	target    load.Target
	rss       func() (int64, error)         // the server's RSS in KiB; nil when the server's PID is unknown
	serverCPU func() (time.Duration, error) // the server's CPU time so far; nil when its PID is unknown
	progress  io.Writer
	label     string             // progress prefix
	cluster   load.ClusterTarget // the cluster, for the cluster scenarios
}

// benchScenarios lists the scenarios in the design's order.
func benchScenarios() []benchScenario {
	return []benchScenario{
		{name: "b1", id: "B1", summary: "N idle registered clients in small channels: server resident memory per connection", define: defineIdleBench},
		{name: "b2", id: "B2", summary: "SASL ATPROTO-CHALLENGE login storm: logins/s and latency", define: defineLoginStormBench},
		{name: "b3", id: "B3", summary: "one channel of 1,000 members, one sender at a rising rate: deliveries/s at p99 ≤ 50 ms with all delivered (plain IRC)",
			define: defineFanoutBench("B3", load.FanoutConfig{Channels: 1, ChannelSize: 1000}, 25, 8, 50*time.Millisecond)},
		{name: "b4", id: "B4", summary: "10,000 clients in 10-member channels, random senders at a rising rate: deliveries/s at p99 ≤ 50 ms (plain IRC)",
			define: defineFanoutBench("B4", load.FanoutConfig{Channels: 1000, ChannelSize: 10, RandomSenders: true}, 1000, 6, 50*time.Millisecond)},
		{name: "b5", id: "B5", summary: "5,000 clients JOIN one channel back to back: time until the last has its NAMES, send-queue kills (plain IRC)", define: defineJoinStormBench},
		{name: "b6", id: "B6", summary: "PRIVMSGs signed with MSGSIG session keys to 10-member channels: verified messages accepted/s", define: defineSignedMessagesBench},
		{name: "b7", id: "B7", summary: "GET /api/v1/verify/{msgid} with 64 concurrent clients: requests/s and latency", define: defineVerifyLoadBench},
		{name: "b8", id: "B8", summary: "TOPIC/MODE/PIN by one writer through a cluster, seen by a member on another node: latency", define: defineClusterChangesBench("B8", 1, load.PlaceFollowers, false)},
		{name: "b9", id: "B9", summary: "the B8 changes by 16 (or --writers) concurrent writers spread over the nodes: changes/s and latency", define: defineClusterChangesBench("B9", 16, load.PlaceAny, false)},
		{name: "b10", id: "B10", summary: "SIGKILL the Raft leader under B8 load: time to the next committed change, acknowledged changes lost", define: defineClusterChangesBench("B10", 1, load.PlaceFollowers, true)},
		{name: "b11", id: "B11", summary: "PRIVMSGs acknowledged by echo-message (stored before the echo) at a rising rate: messages/s at p99 ≤ 10 ms",
			define: defineFanoutBench("B11", load.FanoutConfig{Channels: 64, ChannelSize: 1, Acks: true}, 1000, 6, 10*time.Millisecond)},
		{name: "b12", id: "B12", summary: "GET /api/v1/channels/{c}/history?limit=50 over stored messages, 64 concurrent: requests/s and latency", define: defineRESTLoadBench(load.RESTHistory, "B12")},
		{name: "b13", id: "B13", summary: "newest-first GET /api/v1/search while messages are written: requests/s and latency", define: defineRESTLoadBench(load.RESTSearch, "B13")},
		{name: "b14", id: "B14", summary: "1,000 users in 5 channels across a cluster, a node killed and restarted: acknowledged messages delivered, duplicates", define: defineDeliveryBench},
		{name: "b15", id: "B15", summary: "PRIVMSGs from clients on one node to members on another at a fixed rate: cross-node latency", define: defineCrossNodeBench},
	}
}

// commonBenchFlags are the flags every scenario has.
type commonBenchFlags struct {
	target, wsURL, httpURL, transport, sources string
	runs                                       int
	json                                       bool
	spawn                                      bool
	serverPID                                  int
	serverBin                                  string
	serverArgs                                 listFlag
	raiseFDLimit                               bool
	spawnCluster                               int
	clusterPprof                               bool
	clusterIRC, clusterHTTP                    string
	cpuProfile                                 string
}

func defineCommonBenchFlags(fs *flag.FlagSet) *commonBenchFlags {
	c := &commonBenchFlags{}
	fs.StringVar(&c.target, "target", "127.0.0.1:6667", "IRC server address host:port (plain TCP)")
	fs.StringVar(&c.wsURL, "ws-url", "ws://127.0.0.1:8080/irc", "IRC-over-WebSocket URL, for --transport ws")
	fs.StringVar(&c.httpURL, "http-url", "http://127.0.0.1:8080", "base URL of the server's REST API, for the HTTP scenarios")
	fs.StringVar(&c.transport, "transport", "tcp", "how clients connect: tcp or ws")
	fs.StringVar(&c.sources, "source-addrs", "", "comma-separated local addresses to connect from in turn (e.g. 127.0.0.1,127.0.0.2) to avoid running out of ephemeral ports")
	fs.IntVar(&c.runs, "runs", 3, "number of runs; the report gives the median and the spread (min–max)")
	fs.BoolVar(&c.json, "json", false, "print the report as JSON instead of a table")
	fs.BoolVar(&c.spawn, "spawn", false, "start a fresh 'palaver serve' for each run (temporary data dir, loopback ports, --no-flood-limits, --max-conns-per-ip -1) and measure it")
	fs.IntVar(&c.serverPID, "server-pid", 0, "PID of the server under test, whose memory B1 reads from /proc")
	fs.StringVar(&c.serverBin, "server-bin", "", "palaver binary started by --spawn (default: this executable)")
	fs.Var(&c.serverArgs, "server-arg", "extra argument for the spawned 'palaver serve' (repeatable)")
	fs.BoolVar(&c.raiseFDLimit, "raise-fd-limit", true, "raise this process's open-file limit to its hard limit")
	fs.IntVar(&c.spawnCluster, "spawn-cluster", 0, "cluster scenarios: start a fresh cluster of this many (3 or 5) 'palaver serve' processes for each run (temporary data dirs under $TMPDIR, loopback ports, --no-flood-limits, --max-conns-per-ip -1) and stop it after")
	fs.BoolVar(&c.clusterPprof, "cluster-pprof", false, "with --spawn-cluster: give every node its own --pprof-addr on a free loopback port (printed in the progress lines) to profile one node during the run")
	fs.StringVar(&c.clusterIRC, "cluster-irc", "", "cluster scenarios without --spawn-cluster: comma-separated IRC addresses of the nodes")
	fs.StringVar(&c.clusterHTTP, "cluster-http", "", "cluster scenarios without --spawn-cluster: comma-separated HTTP base URLs of the same nodes, in the same order (for /api/v1/health)")
	fs.StringVar(&c.cpuProfile, "cpu-profile", "", "write a CPU profile of this load client over all runs to this file (go tool pprof), to see what the client itself spends")
	return c
}

func (c *commonBenchFlags) baseTarget() (load.Target, error) {
	transport, err := load.ParseTransport(c.transport)
	if err != nil {
		return load.Target{}, err
	}
	sources, err := load.ParseSourceAddrs(c.sources)
	if err != nil {
		return load.Target{}, err
	}
	return load.Target{IRCAddr: c.target, WSURL: c.wsURL, HTTPURL: c.httpURL, Transport: transport, SourceAddrs: sources}, nil
}

func benchUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: palaver bench <scenario> [flags]\n\nScenarios:\n")
	for _, s := range benchScenarios() {
		fmt.Fprintf(w, "  %-4s %s\n", s.name, s.summary)
	}
	fmt.Fprint(w, "\nRun 'palaver bench <scenario> --help' for its flags.\n")
}

// runBench implements `palaver bench`, the load client of the benchmarks:
// it runs one scenario --runs times against a server given by address (and
// PID, for memory) or spawned per run, prints progress on stderr and the
// report (median and spread per metric, the client's own CPU) on stdout.
// Exit codes: 0 done, 1 a run failed, 2 usage error.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		benchUsage(stderr)
		return 2
	}
	if a := args[0]; a == "help" || a == "-h" || a == "--help" || a == "-help" {
		benchUsage(stdout)
		return 0
	}
	var scenario *benchScenario
	for _, s := range benchScenarios() {
		if strings.EqualFold(args[0], s.name) {
			scenario = &s
		}
	}
	if scenario == nil {
		fmt.Fprintf(stderr, "palaver bench: unknown scenario %q\n\n", args[0])
		benchUsage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("bench "+scenario.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: palaver bench %s [flags]\n\n%s: %s\n\nFlags:\n", scenario.name, scenario.id, scenario.summary)
		fs.PrintDefaults()
	}
	common := defineCommonBenchFlags(fs)
	bc := scenario.define(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := validateBench(fs, common, bc); err != nil {
		fmt.Fprintf(stderr, "palaver bench %s: %v\n", scenario.name, err)
		return 2
	}
	target, err := common.baseTarget()
	if err != nil {
		fmt.Fprintf(stderr, "palaver bench %s: %v\n", scenario.name, err)
		return 2
	}
	if common.raiseFDLimit {
		if limit, err := load.RaiseFDLimit(); err != nil {
			fmt.Fprintf(stderr, "palaver bench: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "open-file limit: %d\n", limit)
		}
	}

	if common.cpuProfile != "" {
		stop, err := startCPUProfile(common.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "palaver bench %s: %v\n", scenario.name, err)
			return 2
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "palaver bench %s: %v\n", scenario.name, err)
			}
		}()
	}

	report := load.Report{
		Scenario: scenario.id,
		Label:    bc.label(target),
		Command:  "palaver bench " + quoteArgs(args),
	}
	code := 0
	for i := 1; i <= common.runs && ctx.Err() == nil; i++ {
		label := fmt.Sprintf("%s run %d/%d", report.Label, i, common.runs)
		run, err := benchOnce(ctx, common, bc, target, label, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "palaver bench %s: %s: %v\n", scenario.name, label, err)
			code = 1
			break
		}
		report.Runs = append(report.Runs, run)
	}
	if len(report.Runs) == 0 {
		return 1
	}
	write := load.WriteTable
	if common.json {
		write = load.WriteJSON
	}
	if err := write(stdout, []load.Report{report}); err != nil {
		fmt.Fprintf(stderr, "palaver bench: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		return 1
	}
	return code
}

func validateBench(fs *flag.FlagSet, c *commonBenchFlags, bc *benchCase) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if c.runs < 1 {
		return errors.New("--runs must be at least 1")
	}
	if c.spawn && c.serverPID != 0 {
		return errors.New("--spawn and --server-pid exclude each other")
	}
	if bc.needsRSS && !c.spawn && c.serverPID <= 0 {
		return errors.New("this scenario measures the server's memory: give --server-pid PID or --spawn")
	}
	if err := validateClusterFlags(c, bc); err != nil {
		return err
	}
	if bc.validate != nil {
		return bc.validate()
	}
	return nil
}

// benchOnce performs one run, spawning a server first when asked.
func benchOnce(ctx context.Context, c *commonBenchFlags, bc *benchCase, target load.Target, label string, stderr io.Writer) (load.Run, error) {
	env := benchEnv{target: target, progress: stderr, label: label}
	if c.serverPID > 0 {
		env.rss, env.serverCPU = serverProbes(c.serverPID)
	}
	if bc.cluster {
		return benchClusterOnce(ctx, c, bc, env)
	}
	if !c.spawn {
		return bc.run(ctx, env)
	}
	srv, dir, err := spawnBenchServer(ctx, c, label, stderr)
	if err != nil {
		return load.Run{}, err
	}
	env.target.IRCAddr, env.target.WSURL, env.target.HTTPURL = srv.ircAddr, srv.wsURL, srv.httpURL
	env.rss, env.serverCPU = serverProbes(srv.PID())
	run, runErr := bc.run(ctx, env)
	stopErr := srv.Stop(15 * time.Second)
	if runErr != nil || stopErr != nil {
		fmt.Fprintf(stderr, "%s: server log kept in %s\n", label, dir)
		return run, errors.Join(runErr, stopErr)
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(stderr, "%s: removing %s: %v\n", label, dir, err)
	}
	return run, nil
}

// serverProbes reads the memory and CPU time of process pid.
func serverProbes(pid int) (rss func() (int64, error), cpu func() (time.Duration, error)) {
	return func() (int64, error) { return load.ReadRSS(pid) },
		func() (time.Duration, error) { return load.ReadProcessCPU(pid) }
}

// benchServer is a `palaver serve` started for one run.
type benchServer struct {
	*load.SpawnedServer
	ircAddr, wsURL, httpURL string
}

// spawnBenchServer starts `palaver serve` on free loopback ports with its
// data in a new temporary directory, which it returns.
func spawnBenchServer(ctx context.Context, c *commonBenchFlags, label string, stderr io.Writer) (*benchServer, string, error) {
	bin := c.serverBin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, "", fmt.Errorf("finding the palaver binary (use --server-bin): %w", err)
		}
		bin = exe
	}
	addrs, err := load.FreeLoopbackAddrs(3)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "palaver-bench-*")
	if err != nil {
		return nil, "", fmt.Errorf("temporary directory: %w", err)
	}
	ircAddr, httpAddr, raftAddr := addrs[0], addrs[1], addrs[2]
	args := []string{"serve",
		"--data", filepath.Join(dir, "data"), "--server-name", "palaver.bench",
		"--irc-addr", ircAddr, "--tls-addr", "", "--http-addr", httpAddr, "--raft-addr", raftAddr,
		"--no-flood-limits", "--max-conns-per-ip", "-1", "--log-level", "warn",
	}
	args = append(args, c.serverArgs...)
	srv, err := load.Spawn(ctx, load.SpawnConfig{
		Binary: bin, Args: args, LogPath: filepath.Join(dir, "server.log"),
		ReadyAddrs: []string{ircAddr, httpAddr},
	})
	if err != nil {
		return nil, dir, err
	}
	fmt.Fprintf(stderr, "%s: spawned %s (pid %d) on %s and %s, data in %s\n", label, bin, srv.PID(), ircAddr, httpAddr, dir)
	return &benchServer{SpawnedServer: srv, ircAddr: ircAddr, wsURL: "ws://" + httpAddr + "/irc", httpURL: "http://" + httpAddr}, dir, nil
}

func defineIdleBench(fs *flag.FlagSet) *benchCase {
	var cfg load.IdleConfig
	fs.IntVar(&cfg.Clients, "clients", 2000, "idle clients to hold")
	fs.IntVar(&cfg.ChannelSize, "channel-size", 10, "members per channel")
	fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 64, "connections being set up at once")
	fs.DurationVar(&cfg.SetupTimeout, "setup-timeout", 30*time.Second, "bound on one client's registration and JOIN")
	fs.DurationVar(&cfg.Settle.Interval, "settle-interval", 250*time.Millisecond, "time between RSS samples")
	fs.IntVar(&cfg.Settle.QuietSamples, "settle-samples", 12, "samples in a row without a rise before the RSS counts as settled")
	fs.Int64Var(&cfg.Settle.Tolerance, "settle-tolerance-kb", 256, "growth in KB that does not count as a rise")
	fs.DurationVar(&cfg.Settle.Timeout, "settle-timeout", 60*time.Second, "give up waiting for the RSS to settle after this long")
	return &benchCase{
		label:    func(t load.Target) string { return fmt.Sprintf("B1 %s N=%d", t.Transport, cfg.Clients) },
		needsRSS: true,
		validate: func() error {
			if cfg.Clients < 1 || cfg.ChannelSize < 1 {
				return errors.New("--clients and --channel-size must be at least 1")
			}
			if limit, err := load.FDLimit(); err == nil && uint64(cfg.Clients)+64 > limit {
				return fmt.Errorf("--clients %d needs more open files than the limit %d allows", cfg.Clients, limit)
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.RSS, c.Progress, c.Label = env.rss, env.progress, env.label
			res, err := load.RunIdle(ctx, env.target, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

func defineLoginStormBench(fs *flag.FlagSet) *benchCase {
	var cfg load.LoginStormConfig
	var curve string
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "logins in flight")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to start new logins (when --count is 0)")
	fs.IntVar(&cfg.Count, "count", 0, "total logins per run (0: run for --duration)")
	fs.StringVar(&curve, "curve", "ed25519", "did:key type: ed25519 or secp256k1")
	fs.IntVar(&cfg.Keys, "keys", 4096, "distinct identities, generated before timing starts and used in turn")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "bound on one login, QUIT included")
	return &benchCase{
		label: func(t load.Target) string {
			return fmt.Sprintf("B2 %s %s c=%d", cfg.Curve, t.Transport, cfg.Concurrency)
		},
		validate: func() error {
			c, err := load.ParseCurve(curve)
			if err != nil {
				return err
			}
			cfg.Curve = c
			if cfg.Concurrency < 1 || cfg.Count < 0 || cfg.Keys < 1 || (cfg.Count == 0 && cfg.Duration <= 0) {
				return errors.New("--concurrency and --keys must be at least 1, and --count or --duration positive")
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
			res, err := load.RunLoginStorm(ctx, env.target, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

func defineSignedMessagesBench(fs *flag.FlagSet) *benchCase {
	var cfg load.SignedMessagesConfig
	fs.IntVar(&cfg.Channels, "channels", 10, "channels, each with one signing sender")
	fs.IntVar(&cfg.ChannelSize, "channel-size", 10, "members per channel, the sender included (the others only read)")
	fs.IntVar(&cfg.Window, "window", 32, "signed messages in flight per sender")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the senders send")
	fs.IntVar(&cfg.BodyBytes, "body-bytes", 100, "message text length")
	fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 16, "clients being set up at once")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "bound on one client's setup and on the answer to one message")
	return &benchCase{
		label: func(t load.Target) string {
			return fmt.Sprintf("B6 %s %dx%d w=%d", t.Transport, cfg.Channels, cfg.ChannelSize, cfg.Window)
		},
		validate: func() error {
			if cfg.Channels < 1 || cfg.ChannelSize < 1 || cfg.Window < 1 || cfg.BodyBytes < 1 || cfg.Duration <= 0 {
				return errors.New("--channels, --channel-size, --window and --body-bytes must be at least 1 and --duration positive")
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
			res, err := load.RunSignedMessages(ctx, env.target, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

func defineVerifyLoadBench(fs *flag.FlagSet) *benchCase {
	var cfg load.VerifyLoadConfig
	fs.IntVar(&cfg.Messages, "messages", 1000, "signed messages seeded through IRC before the load")
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "HTTP requests in flight (one keep-alive connection each)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send requests")
	fs.IntVar(&cfg.Window, "window", 32, "seeding: signed messages in flight")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "bound on one request and on each seeding step")
	return &benchCase{
		label: func(load.Target) string {
			return fmt.Sprintf("B7 c=%d M=%d", cfg.Concurrency, cfg.Messages)
		},
		validate: func() error {
			if cfg.Messages < 1 || cfg.Concurrency < 1 || cfg.Window < 1 || cfg.Duration <= 0 {
				return errors.New("--messages, --concurrency and --window must be at least 1 and --duration positive")
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label, c.ServerCPU = env.progress, env.label, env.serverCPU
			res, err := load.RunVerifyLoad(ctx, env.target, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

// quoteArgs joins args as a shell would need them.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// validateClusterFlags checks the cluster flags against the scenario.
func validateClusterFlags(c *commonBenchFlags, bc *benchCase) error {
	listed := c.clusterIRC != "" || c.clusterHTTP != ""
	switch {
	case c.spawnCluster != 0 && c.spawnCluster != 3 && c.spawnCluster != 5:
		return errors.New("--spawn-cluster takes 3 or 5 nodes")
	case !bc.cluster && (c.spawnCluster != 0 || listed):
		return errors.New("--spawn-cluster, --cluster-irc and --cluster-http are for the cluster scenarios (b8, b9, b10, b14, b15)")
	case !bc.cluster:
		return nil
	case c.spawn:
		return errors.New("a cluster scenario runs against a cluster: use --spawn-cluster 3, not --spawn")
	case c.clusterPprof && c.spawnCluster == 0:
		return errors.New("--cluster-pprof is for a spawned cluster (--spawn-cluster 3)")
	case c.spawnCluster != 0 && listed:
		return errors.New("--spawn-cluster and --cluster-irc/--cluster-http exclude each other")
	case bc.needsKill && c.spawnCluster == 0:
		return errors.New("this scenario kills a node's process: it needs --spawn-cluster 3")
	case c.spawnCluster == 0 && !listed:
		return errors.New("a cluster scenario needs --spawn-cluster 3, or --cluster-irc and --cluster-http")
	case c.spawnCluster == 0:
		_, err := c.listedCluster()
		return err
	}
	return nil
}

// listedCluster builds the cluster given by --cluster-irc and --cluster-http.
func (c *commonBenchFlags) listedCluster() (load.ClusterTarget, error) {
	irc, http := splitList(c.clusterIRC), splitList(c.clusterHTTP)
	if len(irc) < 2 || len(irc) != len(http) {
		return load.ClusterTarget{}, fmt.Errorf("--cluster-irc and --cluster-http must list the same nodes (at least two): %d and %d given", len(irc), len(http))
	}
	var t load.ClusterTarget
	for i := range irc {
		t.Nodes = append(t.Nodes, load.ClusterNode{IRCAddr: irc[i], HTTPURL: http[i]})
	}
	return t, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// benchClusterOnce runs a cluster scenario once, against the listed nodes
// or a cluster spawned for the run.
func benchClusterOnce(ctx context.Context, c *commonBenchFlags, bc *benchCase, env benchEnv) (load.Run, error) {
	if c.spawnCluster == 0 {
		t, err := c.listedCluster()
		if err != nil {
			return load.Run{}, err
		}
		t.SourceAddrs = env.target.SourceAddrs
		env.cluster = t
		return bc.run(ctx, env)
	}
	bin, err := serverBinary(c)
	if err != nil {
		return load.Run{}, err
	}
	dir, err := os.MkdirTemp("", "palaver-bench-cluster-*")
	if err != nil {
		return load.Run{}, fmt.Errorf("temporary directory: %w", err)
	}
	cluster, err := load.SpawnCluster(ctx, load.ClusterSpawnConfig{
		Binary: bin, Nodes: c.spawnCluster, Dir: dir, ExtraArgs: c.serverArgs, Pprof: c.clusterPprof,
		Progress: env.progress, Label: env.label,
	})
	if err != nil {
		fmt.Fprintf(env.progress, "%s: node logs kept in %s\n", env.label, dir)
		return load.Run{}, err
	}
	env.cluster = cluster.Target()
	env.cluster.SourceAddrs = env.target.SourceAddrs
	run, runErr := bc.run(ctx, env)
	stopErr := cluster.Stop(15 * time.Second)
	if runErr != nil || stopErr != nil {
		fmt.Fprintf(env.progress, "%s: node logs kept in %s\n", env.label, dir)
		return run, errors.Join(runErr, stopErr)
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(env.progress, "%s: removing %s: %v\n", env.label, dir, err)
	}
	return run, nil
}

// serverBinary is --server-bin or this executable.
func serverBinary(c *commonBenchFlags) (string, error) {
	if c.serverBin != "" {
		return c.serverBin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the palaver binary (use --server-bin): %w", err)
	}
	return exe, nil
}

// defineClusterChangesBench defines B8, B9 or B10: they differ in the
// number of writers, where they connect, and the kill.
func defineClusterChangesBench(id string, writers int, placement load.Placement, kill bool) func(fs *flag.FlagSet) *benchCase {
	return func(fs *flag.FlagSet) *benchCase {
		cfg := load.ClusterChangesConfig{Writers: writers}
		kinds, place := "topic,mode,pin", string(placement)
		if kill {
			kinds = "topic"
		}
		fs.IntVar(&cfg.Writers, "writers", writers, "writers, each with its own channel and an observer on another node")
		fs.StringVar(&kinds, "kinds", kinds, "changes each writer makes in turn: comma-separated topic, mode (ban +b/-b), pin (PIN/UNPIN)")
		fs.IntVar(&cfg.Window, "window", 1, "changes a writer has in flight (sent, its echo or refusal not yet read)")
		fs.Float64Var(&cfg.Rate, "rate", 0, "cap on the changes per second of all writers together (0: as fast as --window allows)")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the writers write")
		fs.StringVar(&place, "placement", place, "where writers connect: any (spread over the nodes), leader, follower, followers; observers connect to another node")
		fs.IntVar(&cfg.TopicBytes, "topic-bytes", 100, "topic text length")
		fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 16, "writer and observer pairs set up at once")
		fs.DurationVar(&cfg.Timeout, "timeout", 20*time.Second, "bound on each setup step, on the answer to one change and on each step of the loss check")
		if kill {
			fs.DurationVar(&cfg.KillLeaderAfter, "kill-after", 3*time.Second, "when to SIGKILL the leader's process, after the writers start")
		}
		return &benchCase{
			cluster:   true,
			needsKill: kill,
			label: func(load.Target) string {
				rate := ""
				if cfg.Rate > 0 {
					rate = fmt.Sprintf(" rate=%.0f/s", cfg.Rate)
				}
				return fmt.Sprintf("%s %s writers=%d w=%d%s %s", id, kinds, cfg.Writers, cfg.Window, rate, place)
			},
			validate: func() error {
				k, err := load.ParseChangeKinds(kinds)
				if err != nil {
					return err
				}
				p, err := load.ParsePlacement(place)
				if err != nil {
					return err
				}
				cfg.Kinds, cfg.Placement = k, p
				if cfg.Writers < 1 || cfg.Window < 1 || cfg.TopicBytes < 8 || cfg.Duration <= 0 || cfg.SetupConcurrency < 1 || cfg.Rate < 0 {
					return errors.New("--writers, --window and --setup-concurrency must be at least 1, --topic-bytes at least 8, --duration positive and --rate not negative")
				}
				if kill {
					if p != load.PlaceFollower && p != load.PlaceFollowers {
						return errors.New("the clients must stay off the leader that is killed: --placement follower or followers")
					}
					if cfg.KillLeaderAfter <= 0 || cfg.KillLeaderAfter >= cfg.Duration {
						return errors.New("--kill-after must be positive and shorter than --duration")
					}
				}
				return nil
			},
			run: func(ctx context.Context, env benchEnv) (load.Run, error) {
				c := cfg
				c.Progress, c.Label = env.progress, env.label
				res, err := load.RunClusterChanges(ctx, env.cluster, c)
				if err != nil {
					return load.Run{}, err
				}
				return res.Run(), nil
			},
		}
	}
}

func defineCrossNodeBench(fs *flag.FlagSet) *benchCase {
	var cfg load.CrossNodeConfig
	place := string(load.PlaceFollower)
	fs.IntVar(&cfg.Senders, "senders", 16, "senders, each in its own channel")
	fs.IntVar(&cfg.ReceiversPerChannel, "receivers", 1, "members of each channel connected to another node")
	fs.Float64Var(&cfg.Rate, "rate", 10000, "messages per second, all senders together")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to send")
	fs.IntVar(&cfg.BodyBytes, "body-bytes", 100, "message text length")
	fs.StringVar(&place, "placement", place, "where senders connect: any, leader, follower, followers; receivers connect to another node")
	fs.DurationVar(&cfg.Tick, "tick", 5*time.Millisecond, "how often a sender writes the messages that fell due")
	fs.IntVar(&cfg.SetupConcurrency, "setup-concurrency", 16, "clients being set up at once")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "bound on each setup step and on the wait for the last deliveries")
	return &benchCase{
		cluster: true,
		label: func(load.Target) string {
			return fmt.Sprintf("B15 %.0f/s senders=%d receivers=%d %s", cfg.Rate, cfg.Senders, cfg.ReceiversPerChannel, place)
		},
		validate: func() error {
			p, err := load.ParsePlacement(place)
			if err != nil {
				return err
			}
			cfg.Placement = p
			if cfg.Senders < 1 || cfg.ReceiversPerChannel < 1 || cfg.Rate <= 0 || cfg.BodyBytes < 16 || cfg.Duration <= 0 || cfg.Tick <= 0 {
				return errors.New("--senders and --receivers must be at least 1, --body-bytes at least 16, and --rate, --duration and --tick positive")
			}
			return nil
		},
		run: func(ctx context.Context, env benchEnv) (load.Run, error) {
			c := cfg
			c.Progress, c.Label = env.progress, env.label
			res, err := load.RunCrossNodeMessages(ctx, env.cluster, c)
			if err != nil {
				return load.Run{}, err
			}
			return res.Run(), nil
		},
	}
}

// startCPUProfile starts profiling this process's CPU into path; the returned function stops it
// and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}
