package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/testcluster"
)

// runTestCluster is `palaver testcluster`: a checked multi-node run in this process (see package
// testcluster), with live progress on stderr and a verdict table on stdout. It exits 0 only when
// every check passed, 1 when one failed, 2 for bad flags or a run that could not be carried out.
func runTestCluster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testcluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "number of nodes")
	duration := fs.Duration("duration", 60*time.Second, "how long the clients send traffic")
	chaos := fs.Bool("chaos", false, "inject faults while the traffic runs (see --faults)")
	faults := fs.String("faults", "all", "with --chaos: fault kinds drawn each round, comma-separated: kill, partition, transfer, slow-disk, poison, or all (with --processes only kill)")
	processes := fs.Bool("processes", false, "run every node as a separate 'palaver serve' process (real disks, kill -9) instead of in this process")
	serverBin := fs.String("server-bin", "", "with --processes: the palaver binary to start (default: this executable)")
	upgradeFrom := fs.String("upgrade-from", "", "a rolling upgrade: start the nodes as processes of this palaver binary (a previous version) and replace them one per round with --server-bin (implies --processes --chaos --faults upgrade --rounds <nodes>)")
	seed := fs.Int64("seed", 0, "seed for the workload and the fault schedule (0: from the clock; printed)")
	rounds := fs.Int("rounds", 0, "with --chaos: stop after this many fault rounds (--duration stays the upper bound)")
	raftProfile := fs.String("raft-profile", raft.ProfileProduction, "the nodes' Raft timing profile: "+strings.Join(raft.ProfileNames(), ", ")+" (production is what palaver serve ships)")
	dir := fs.String("dir", "", "directory for the nodes' data (default: a temporary directory, removed afterwards)")
	topicChannels := fs.Int("topic-channels", 2, "channels whose topics are checked for linearizability")
	topicClients := fs.Int("topic-clients", 2, "topic clients per node")
	chatClients := fs.Int("chat-clients", 1, "chat clients per node")
	nickClients := fs.Int("nick-clients", 1, "nick clients per node (claim and release nicks of a shared pool; 0: none)")
	nickPool := fs.Int("nick-pool", 3, "nicks the nick clients contend for")
	modeClients := fs.Int("mode-clients", 1, "mode clients per node (toggle +m, +n, +t, +k as server operators; 0: none)")
	pinClients := fs.Int("pin-clients", 1, "pin clients per node (PIN and UNPIN messages stored at setup; 0: none)")
	messageInterval := fs.Duration("message-interval", 100*time.Millisecond, "mean pause between one chat client's messages")
	logLevel := fs.String("log", "", "write the nodes' logs to stderr at this level (debug, info, warn, error)")
	viz := fs.String("viz", "", "write porcupine's HTML view of the topic history to this file (and of the nick, mode and pin histories next to it, with -nick, -mode, -pin before the extension)")
	details := fs.Int("details", 20, "how many lost or duplicated items to list when a check fails")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: palaver testcluster [flags]

Starts N nodes (in this process, or with --processes as separate 'palaver serve' processes) on
loopback ports with real disks under a temporary directory, drives topic, nick, mode, pin and chat
clients against every node and checks: topic operations are linearizable (porcupine) and no
acknowledged change is lost; nick claims and releases, channel mode changes and pins are
linearizable against fenced reads; every acknowledged message reaches every chat client exactly
once (live, or through CHATHISTORY after a reconnection); all nodes end with equal state hashes. With --chaos, a seeded
nemesis injects one fault at a time during the traffic: kill and restart a node (kill -9 for
processes), partition the network (isolate the leader or another node; with 5 nodes also a
minority split) and heal it, transfer leadership, slow a node's Raft log writes. With
--upgrade-from OLD, the nodes start as processes of OLD and each round replaces one (SIGTERM, then
--server-bin on the same data directory) while the traffic runs: a rolling upgrade, under the same
checks.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "palaver testcluster: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *nodes < 1 || *duration <= 0 || *topicChannels < 1 || *topicClients < 1 || *chatClients < 1 || *nickPool < 1 {
		fmt.Fprintln(stderr, "palaver testcluster: --nodes, --duration, --topic-channels, --topic-clients, --chat-clients and --nick-pool must be positive")
		return 2
	}
	if *nickClients < 0 || *modeClients < 0 || *pinClients < 0 {
		fmt.Fprintln(stderr, "palaver testcluster: --nick-clients, --mode-clients and --pin-clients must not be negative")
		return 2
	}
	if *chaos && *nodes < 3 {
		fmt.Fprintln(stderr, "palaver testcluster: --chaos needs at least 3 nodes (a node down must leave a quorum)")
		return 2
	}
	var afterRounds time.Duration
	if *upgradeFrom != "" {
		*processes, *chaos = true, true
		afterRounds = 5 * time.Second // the upgraded cluster serves alone before the checks
		if *faults == "all" {
			*faults = string(testcluster.FaultUpgrade)
		}
		if *rounds == 0 {
			*rounds = *nodes
		}
	}
	kinds, err := testcluster.ParseFaultKinds(*faults)
	if err != nil {
		fmt.Fprintf(stderr, "palaver testcluster: --faults: %v\n", err)
		return 2
	}
	var procs *testcluster.ProcessOptions
	if *processes {
		if *faults == "all" {
			kinds = []testcluster.FaultKind{testcluster.FaultKill}
		}
		bin := *serverBin
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				fmt.Fprintf(stderr, "palaver testcluster: --server-bin: %v\n", err)
				return 2
			}
		}
		procs = &testcluster.ProcessOptions{Binary: bin}
		if *upgradeFrom != "" {
			procs = &testcluster.ProcessOptions{Binary: *upgradeFrom, UpgradeTo: bin}
		}
	}
	logger, err := nodeLogger(*logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "palaver testcluster: %v\n", err)
		return 2
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	mode := "in this process"
	if procs != nil {
		mode = "as processes of " + procs.Binary
		if procs.UpgradeTo != "" {
			mode += ", upgraded one by one to " + procs.UpgradeTo
		}
	}
	fmt.Fprintf(stderr, "testcluster: %d nodes %s, %s of traffic, chaos %v (faults %v), seed %d\n", *nodes, mode, *duration, *chaos, kinds, *seed)

	var mu sync.Mutex // progress and events share stderr
	var last testcluster.Progress
	opts := testcluster.RunOptions{
		Options:             testcluster.Options{Nodes: *nodes, Dir: *dir, Seed: *seed, Logger: logger, Processes: procs, RaftProfile: *raftProfile},
		Duration:            *duration,
		Chaos:               *chaos,
		Nemesis:             testcluster.NemesisOptions{MaxRounds: *rounds, Kinds: kinds},
		EndWithRounds:       *rounds > 0,
		AfterRounds:         afterRounds,
		TopicChannels:       *topicChannels,
		TopicClientsPerNode: *topicClients,
		ChatClientsPerNode:  *chatClients,
		MessageInterval:     *messageInterval,
		NickPool:            *nickPool,
		NickClientsPerNode:  noneIsNegative(*nickClients),
		ModeClientsPerNode:  noneIsNegative(*modeClients),
		PinClientsPerNode:   noneIsNegative(*pinClients),
		Progress: func(p testcluster.Progress) {
			mu.Lock()
			defer mu.Unlock()
			secs := (p.Elapsed - last.Elapsed).Seconds()
			if secs <= 0 {
				secs = 1
			}
			topicRate := float64(p.TopicWrites+p.TopicReads+p.TopicUnknown-last.TopicWrites-last.TopicReads-last.TopicUnknown) / secs
			objectRate := float64(p.ObjectWrites+p.ObjectReads+p.ObjectUnknown-last.ObjectWrites-last.ObjectReads-last.ObjectUnknown) / secs
			msgRate := float64(p.MessagesAcked-last.MessagesAcked) / secs
			leader := p.Leader
			if leader == "" {
				leader = "none"
			}
			fmt.Fprintf(stderr, "%6.1fs %-8s topic ops/s %6.1f  nick/mode/pin ops/s %6.1f  msgs/s %6.1f  | writes %d reads %d unknown %d | msgs acked %d delivered %d | up %d/%d leader %s | rounds %d\n",
				p.Elapsed.Seconds(), p.Phase, topicRate, objectRate, msgRate, p.TopicWrites+p.ObjectWrites, p.TopicReads+p.ObjectReads, p.TopicUnknown+p.ObjectUnknown,
				p.MessagesAcked, p.Deliveries, p.NodesUp, *nodes, leader, p.Rounds)
			last = p
		},
		OnEvent: func(e testcluster.NemesisEvent) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "nemesis %s\n", e)
		},
	}
	rep, err := testcluster.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "palaver testcluster: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout)
	rep.WriteTable(stdout)
	if *viz != "" {
		if err := writeVisualization(*viz, rep); err != nil {
			fmt.Fprintf(stderr, "palaver testcluster: %v\n", err)
		}
	}
	if !rep.Passed() {
		fmt.Fprintln(stdout)
		rep.WriteDetails(stdout, *details)
		return 1
	}
	return 0
}

func nodeLogger(level string, w io.Writer) (*slog.Logger, error) {
	if level == "" {
		return nil, nil // discarded
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// noneIsNegative maps a flag's 0 (no clients) to RunOptions' negative count (0 there means the
// default).
func noneIsNegative(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// writeVisualization writes the topic history's view to path and each other checked history's
// next to it (history-nick.html for history.html).
func writeVisualization(path string, rep *testcluster.Report) error {
	ext := filepath.Ext(path)
	views := []struct {
		path  string
		write func(io.Writer) error
	}{{path, rep.Topics.WriteVisualization}}
	for _, v := range []*testcluster.ObjectVerdict{&rep.Nicks, &rep.Modes, &rep.Pins} {
		if v.Result != "" {
			views = append(views, struct {
				path  string
				write func(io.Writer) error
			}{strings.TrimSuffix(path, ext) + "-" + v.Kind + ext, v.WriteVisualization})
		}
	}
	for _, view := range views {
		f, err := os.Create(view.path)
		if err != nil {
			return fmt.Errorf("--viz: %w", err)
		}
		if err := view.write(f); err != nil {
			f.Close()
			return fmt.Errorf("--viz %s: %w", view.path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("--viz: %w", err)
		}
	}
	return nil
}
