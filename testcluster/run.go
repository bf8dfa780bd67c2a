package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// RunOptions configure a checked run: a cluster, a workload, optionally a nemesis, and the checks.
type RunOptions struct {
	Options
	Duration time.Duration // traffic time; default 15 s
	Chaos    bool          // run the nemesis during the traffic
	Nemesis  NemesisOptions
	// EndWithRounds ends the traffic as soon as the nemesis finished Nemesis.MaxRounds rounds
	// (Duration stays the upper bound). Otherwise the traffic lasts Duration and the nemesis
	// stops after its rounds.
	EndWithRounds bool
	// AfterRounds, with EndWithRounds, is how long the traffic goes on after the last round
	// (e.g. the upgraded cluster serving alone before the checks).
	AfterRounds time.Duration

	TopicChannels       int           // channels whose topic is a checked register; default 2
	TopicClientsPerNode int           // default 2, spread over the channels
	ChatClientsPerNode  int           // default 1
	MessageInterval     time.Duration // mean pause between one chat client's messages; default 100 ms
	TopicThink          time.Duration // longest pause between topic operations; default 20 ms

	// Nick, mode and pin workloads (see objectWork); a count of clients per node below zero
	// turns a workload off.
	NickPool           int           // nicks the nick clients contend for; default 3
	NickClientsPerNode int           // default 1
	ModeChannels       int           // channels whose modes are checked; default 1
	ModeClientsPerNode int           // default 1, spread over the channels
	PinChannels        int           // channels whose pin lists are checked; default 1
	PinMessages        int           // messages stored per pin channel at setup; default 8, at most 49
	PinClientsPerNode  int           // default 1, spread over the channels
	ObjectThink        time.Duration // longest pause between nick, mode and pin operations; default 40 ms

	ConvergeTimeout time.Duration // for WaitConverged after the traffic; default 30 s
	DrainTimeout    time.Duration // for every owed message to be read; default 30 s
	CheckTimeout    time.Duration // for porcupine; default 60 s

	// Progress, when set, is called every ProgressEvery (default 1 s) while the run lasts.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// OnEvent, when set, is called for each nemesis event as it happens.
	OnEvent func(NemesisEvent)
}

func (o *RunOptions) defaults() {
	o.Options.defaults()
	o.Nemesis.defaults()
	if len(o.Nemesis.Kinds) == 0 {
		o.Nemesis.Kinds = AllFaults
		if o.Processes != nil {
			o.Nemesis.Kinds = []FaultKind{FaultKill}
		}
	}
	setDefault(&o.Duration, 15*time.Second)
	setDefault(&o.TopicChannels, 2)
	setDefault(&o.TopicClientsPerNode, 2)
	setDefault(&o.ChatClientsPerNode, 1)
	setDefault(&o.MessageInterval, 100*time.Millisecond)
	setDefault(&o.TopicThink, 20*time.Millisecond)
	setDefault(&o.NickPool, 3)
	setDefault(&o.NickClientsPerNode, 1)
	setDefault(&o.ModeChannels, 1)
	setDefault(&o.ModeClientsPerNode, 1)
	setDefault(&o.PinChannels, 1)
	setDefault(&o.PinMessages, 8)
	setDefault(&o.PinClientsPerNode, 1)
	setDefault(&o.ObjectThink, 40*time.Millisecond)
	o.PinMessages = min(o.PinMessages, maxPins-1)
	setDefault(&o.ConvergeTimeout, 30*time.Second)
	setDefault(&o.DrainTimeout, 30*time.Second)
	setDefault(&o.CheckTimeout, 60*time.Second)
	setDefault(&o.ProgressEvery, time.Second)
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// Run starts a cluster, drives the workload (with the nemesis when opts.Chaos), lets it settle,
// checks everything and returns the report. The error is for a run that could not be carried
// out (a node that would not start, ctx ending); a failed check is in the report.
func Run(ctx context.Context, opts RunOptions) (*Report, error) {
	opts.defaults()
	if opts.Processes != nil && opts.Chaos && slices.ContainsFunc(opts.Nemesis.Kinds, func(k FaultKind) bool { return k != FaultKill && k != FaultUpgrade }) {
		return nil, fmt.Errorf("testcluster: nodes run as processes: only kill and upgrade rounds can be injected (asked for %v)", opts.Nemesis.Kinds)
	}
	if opts.Chaos && slices.Contains(opts.Nemesis.Kinds, FaultUpgrade) && (opts.Processes == nil || opts.Processes.UpgradeTo == "") {
		return nil, errors.New("testcluster: upgrade rounds need the nodes as processes and Processes.UpgradeTo")
	}
	r := &runner{opts: opts, rec: newRecorder(), phase: "starting"}
	c, err := Start(ctx, opts.Options)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r.c = c
	r.rep = &Report{Seed: opts.Seed, Nodes: c.N(), Chaos: opts.Chaos}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	if err := r.setupObjects(ctx); err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		defer r.reportProgress()()
	}

	traffic, stopTraffic := context.WithCancel(ctx)
	done, stopReading := context.WithCancel(ctx)
	topicWorkers, chatWorkers := r.startClients(traffic, done)
	r.startObjectClients(traffic, done, topicWorkers, chatWorkers)
	var nemesisDone sync.WaitGroup
	defer func() { // on an early return; a no-op after the normal end
		stopTraffic()
		stopReading()
		nemesisDone.Wait()
		topicWorkers.Wait()
		chatWorkers.Wait()
	}()
	if err := r.waitJoined(ctx); err != nil {
		return nil, err
	}
	r.setPhase("traffic")
	began := time.Now()
	trafficTimer := time.AfterFunc(opts.Duration, stopTraffic)
	defer trafficTimer.Stop()
	var nemesisErr error
	if opts.Chaos {
		nemesisDone.Go(func() {
			r.rep.Rounds, nemesisErr = nemesis(traffic, ctx, c, r.rec, r.rng(), opts.Nemesis, r.event)
			if opts.EndWithRounds {
				pause(traffic, opts.AfterRounds)
				stopTraffic()
			}
		})
	}
	<-traffic.Done()
	r.rep.Duration = time.Since(began)

	r.setPhase("settling")
	r.mark = time.Now()
	nemesisDone.Wait()
	topicWorkers.Wait()
	r.phaseDone("settle")
	if nemesisErr != nil {
		r.rep.Problems = append(r.rep.Problems, nemesisErr.Error())
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := r.converge(ctx); err != nil {
		r.rep.Problems = append(r.rep.Problems, "after the traffic: "+err.Error())
	}
	r.phaseDone("converge")
	r.finalReads(ctx)
	r.phaseDone("final reads")

	r.setPhase("draining")
	r.drain(ctx)
	stopReading()
	chatWorkers.Wait()
	r.phaseDone("drain")

	if err := r.converge(ctx); err != nil {
		r.rep.ConvergeError = err.Error()
	}
	r.rep.HashesEqual = r.rep.ConvergeError == ""
	r.rep.States = c.States()
	r.rep.DeadLetters = c.DeadLetters()
	if r.poisoned() && r.rep.DeadLetters != nil && sum(r.rep.DeadLetters) == 0 {
		r.rep.Problems = append(r.rep.Problems, "poison rows were stored but no node recorded a dead letter")
	}
	ops, echoes := r.rec.topicHistory()
	r.rep.Topics = CheckTopics(ops, echoes, opts.CheckTimeout)
	r.rep.Nicks = CheckNicks(r.rec.objectHistory(nickSpec.kind), opts.CheckTimeout)
	r.rep.Modes = CheckModes(r.rec.objectHistory(modeSpec.kind), opts.CheckTimeout)
	r.rep.Pins = CheckPins(r.rec.objectHistory(pinSpec.kind), opts.CheckTimeout)
	r.rep.Delivery = CheckDelivery(r.rec.deliveryHistory())
	diagnoseLosses(ctx, c, r.rep.Delivery.Lost)
	r.phaseDone("check")
	return r.rep, nil
}

// runner is the state of one Run.
type runner struct {
	opts     RunOptions
	c        *Cluster
	rec      *recorder
	rep      *Report
	streams  uint64 // random streams handed out, each seeded from opts.Seed
	clientID int    // porcupine client ids handed out
	// pinMsgIDs are the messages stored in each pin channel at setup.
	pinMsgIDs [][]string
	mark      time.Time // start of the current step after the traffic

	mu     sync.Mutex // guards phase, rounds and rep.Events while the run goes on
	phase  string
	rounds int
}

// rng returns a new random stream derived from the seed: every client and the nemesis draw from
// their own, so one's pace does not change another's choices.
// poisoned reports whether a poison round stored its rows.
func (r *runner) poisoned() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.rep.Events {
		if e.Kind == "poison" && e.Err == nil {
			return true
		}
	}
	return false
}

func (r *runner) rng() *rand.Rand {
	r.streams++
	return rand.New(rand.NewPCG(uint64(r.opts.Seed), r.streams))
}

func (r *runner) setPhase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

func (r *runner) phaseDone(name string) {
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, Took: time.Since(r.mark)})
	r.mark = time.Now()
}

// event records a nemesis event and passes it on.
func (r *runner) event(e NemesisEvent) {
	r.mu.Lock()
	r.rounds = e.Round
	r.rep.Events = append(r.rep.Events, e)
	r.mu.Unlock()
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(e)
	}
}

func (r *runner) converge(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.ConvergeTimeout)
	defer cancel()
	return r.c.WaitConverged(ctx)
}

// drain waits until every chat client read every message it is owed, or DrainTimeout.
func (r *runner) drain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.DrainTimeout)
	defer cancel()
	poll(ctx, 100*time.Millisecond, func() (bool, error) {
		v := CheckDelivery(r.rec.deliveryHistory())
		return len(v.Lost) == 0, nil
	})
}
