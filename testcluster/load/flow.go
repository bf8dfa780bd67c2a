package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// A message flow is the machinery the PRIVMSG scenarios share (B3 fan-out,
// B4 small channels, B11 durable messages, B14 delivery across a node
// restart): channels of member connections, a pacer that writes messages
// at a set rate from members it picks, and readers that match every
// PRIVMSG they get to its send by the number in its text. Each channel
// keeps the record of its messages (send time, sender, echo time), so a
// reader can time a delivery and tell a duplicate, and the end of a run
// can tell which acknowledged message a member never got.

// flowChannel is one channel and the record of the messages sent to it.
type flowChannel struct {
	index int
	name  string

	mu      sync.RWMutex
	members []*flowClient // current members; a reconnected member replaces its slot

	// Message seq's record. senders[seq] is written before sentAt[seq],
	// which readers load first. sentAt is the unix ns of the write that
	// carried the message, 0 while unsent and −1 when the write failed;
	// ackedAt the unix ns its sender read its echo.
	senders []int32
	sentAt  []atomic.Int64
	ackedAt []atomic.Int64
	// msgids[seq] is the msgid the server gave message seq, as the first
	// client that read it with its tags saw it (B14 only).
	msgids []atomic.Pointer[string]
	next   int // next seq; only the pacer touches it
}

func newFlowChannel(index int, name string, capacity int) *flowChannel {
	return &flowChannel{
		index: index, name: name,
		senders: make([]int32, capacity), sentAt: make([]atomic.Int64, capacity), ackedAt: make([]atomic.Int64, capacity),
		msgids: make([]atomic.Pointer[string], capacity),
	}
}

// noteMsgID keeps the msgid of message seq, the first time it is seen.
func (ch *flowChannel) noteMsgID(seq int, msgid string) {
	if ch.msgids[seq].Load() == nil {
		ch.msgids[seq].CompareAndSwap(nil, &msgid)
	}
}

// msgID is the msgid of message seq, "" when no client saw it.
func (ch *flowChannel) msgID(seq int) string {
	if p := ch.msgids[seq].Load(); p != nil {
		return *p
	}
	return ""
}

// liveMembers returns the members whose connection is open.
func (ch *flowChannel) liveMembers() []*flowClient {
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	out := make([]*flowClient, 0, len(ch.members))
	for _, m := range ch.members {
		if m.alive.Load() {
			out = append(out, m)
		}
	}
	return out
}

// flowClient is one member connection. Its read loop records what it
// receives; the pacer writes its messages from another goroutine.
type flowClient struct {
	index    int // unique over the run, reconnections included
	slot     int // its place in the channel's members
	node     int // the cluster node it is connected to (0 on one server)
	ch       *flowChannel
	conn     lineConn
	echo     bool  // the server acknowledged echo-message
	joinedAt int64 // unix ns when its JOIN completed (0 while joining)
	alive    atomic.Bool
	done     chan struct{}
	// prev is the connection this one replaced (the same user before a
	// reconnection); nil for a user's first connection.
	prev *flowClient
	// trackIDs has the read loop read each PRIVMSG's msgid and batch
	// tags: B14 needs them for the catch-up from history and the report
	// of each lost or duplicated delivery.
	trackIDs bool
	endedAt  atomic.Int64  // unix ns when the read loop ended
	fetch    *historyFetch // the CHATHISTORY catch-up after a reconnection; nil without one

	mu        sync.Mutex
	seen      []uint64        // bitset over the channel's seqs: received live
	hist      []uint64        // bitset: received in a chathistory batch
	recvAt    []int64         // unix ns of the first receipt of each seq (trackIDs only)
	lastMsgID string          // msgid of the last PRIVMSG received live (trackIDs only)
	latencies []time.Duration // send → delivery, since the last take
	echoes    []time.Duration // send → own echo, since the last take
	delivered int64
	acked     int64
	early     int64 // messages sent before it joined, delivered live afterwards
	dups      int64 // the same message delivered live twice on this connection
	overlap   int64 // messages received both live and from history (a client dedups them by msgid)
	fromHist  int64 // messages received from history
	unknown   int64
	refusals  int64
	first     []string
	dupEvents []dupEvent // the first few live duplicates, for the report
}

// dupEvent is one message delivered live twice to one connection.
type dupEvent struct {
	seq           int
	first, second int64 // unix ns of the two receipts
}

// maxDupEvents bounds the duplicates a client keeps for the report.
const maxDupEvents = 16

// flowText is the text of message seq: "q<seq> " and filler up to size
// bytes. The receivers read the number back with flowSeq.
func flowText(size int) func(seq int) string { return benchBody("q", size) }

// flowSeq reads the sequence number from the text of a flow message.
func flowSeq(text string) (int, bool) {
	if !strings.HasPrefix(text, "q") {
		return 0, false
	}
	num, _, _ := strings.Cut(text[1:], " ")
	seq, err := strconv.Atoi(num)
	return seq, err == nil && seq >= 0
}

// privmsgText returns the text of a PRIVMSG line without parsing its tags:
// the part after the first " :" following " PRIVMSG " (tags and source
// hold no " PRIVMSG ").
func privmsgText(line string) (string, bool) {
	i := strings.Index(line, " PRIVMSG ")
	if i < 0 {
		return "", false
	}
	_, text, ok := strings.Cut(line[i+len(" PRIVMSG "):], " :")
	return text, ok
}

// readLoop records deliveries and echoes, answers PINGs, follows a
// history catch-up and counts refusals until the connection ends.
func (c *flowClient) readLoop() {
	defer close(c.done)
	defer c.alive.Store(false)
	defer func() { c.endedAt.Store(time.Now().UnixNano()) }()
	ctx := context.Background() // no deadline: the connection is closed to end the loop
	for {
		line, err := c.conn.readLine(ctx)
		if err != nil {
			return
		}
		if !c.handleLine(ctx, line) {
			return
		}
	}
}

// handleLine records one line read; false when the connection failed.
func (c *flowClient) handleLine(ctx context.Context, line string) bool {
	at := time.Now().UnixNano()
	if text, ok := privmsgText(line); ok {
		if !c.trackIDs {
			c.record(text, at, false, "")
			return true
		}
		// Only chathistory batches carry PRIVMSGs to these clients.
		msgid, batch := tagValue(line, "msgid"), tagValue(line, "batch")
		if batch != "" && c.fetch != nil {
			c.fetch.noteMessage(batch, msgid)
		}
		c.record(text, at, batch != "", msgid)
		return true
	}
	if !strings.Contains(line, "PING") && !strings.Contains(line, "FAIL") && !strings.Contains(line, "ERROR") &&
		!strings.Contains(line, " 404 ") && !strings.Contains(line, "BATCH") {
		return true
	}
	m, err := ircmsg.Parse(line)
	if err != nil {
		return true
	}
	switch m.Command {
	case "PING":
		return c.conn.writeLines(ctx, pong(m)) == nil
	case "BATCH":
		if c.fetch != nil {
			if next := c.fetch.batchLine(m, at); next != "" {
				return c.conn.writeLines(ctx, next) == nil
			}
		}
	case "FAIL", "404", "ERROR":
		c.mu.Lock()
		c.refusals++
		if len(c.first) < maxFirstErrors {
			c.first = append(c.first, truncate(line, 200))
		}
		c.mu.Unlock()
		if m.Command == "FAIL" && m.Param(0) == "CHATHISTORY" && c.fetch != nil {
			c.fetch.fail(at)
		}
	}
	return true
}

// record matches one received message text to its send. fromHistory
// marks a message of a chathistory batch: it counts as received but is
// neither timed nor a duplicate of a live receipt.
func (c *flowClient) record(text string, at int64, fromHistory bool, msgid string) {
	seq, ok := flowSeq(text)
	ch := c.ch
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || seq >= len(ch.sentAt) {
		c.unknown++
		return
	}
	sentAt := ch.sentAt[seq].Load()
	if sentAt <= 0 {
		c.unknown++
		return
	}
	if msgid != "" {
		ch.noteMsgID(seq, msgid)
	}
	if int(ch.senders[seq]) == c.index {
		if !fromHistory && ch.ackedAt[seq].CompareAndSwap(0, at) {
			c.acked++
			c.echoes = append(c.echoes, time.Duration(at-sentAt))
		}
		return
	}
	word, bit := seq/64, uint64(1)<<(seq%64)
	if c.recvAt != nil && c.recvAt[seq] == 0 {
		c.recvAt[seq] = at
	}
	if fromHistory {
		if c.seen[word]&bit != 0 || c.hist[word]&bit != 0 {
			c.overlap++
		} else {
			c.fromHist++
		}
		c.hist[word] |= bit
		return
	}
	if msgid != "" {
		c.lastMsgID = msgid
	}
	if c.seen[word]&bit != 0 {
		c.dups++
		if len(c.dupEvents) < maxDupEvents {
			var first int64
			if c.recvAt != nil {
				first = c.recvAt[seq]
			}
			c.dupEvents = append(c.dupEvents, dupEvent{seq: seq, first: first, second: at})
		}
		return
	}
	c.seen[word] |= bit
	if c.hist[word]&bit != 0 {
		c.overlap++ // already read from history; not timed
		return
	}
	if c.joinedAt == 0 || sentAt < c.joinedAt {
		c.early++ // sent before this connection joined: not timed
		return
	}
	c.delivered++
	c.latencies = append(c.latencies, time.Duration(at-sentAt))
}

// tagValue returns the value of an IRCv3 message tag of line, "" when
// the line has no such tag (values are returned unescaped: msgids and
// batch ids hold no escapes).
func tagValue(line, key string) string {
	if !strings.HasPrefix(line, "@") {
		return ""
	}
	tags, _, _ := strings.Cut(line[1:], " ")
	for tags != "" {
		var tag string
		tag, tags, _ = strings.Cut(tags, ";")
		k, v, _ := strings.Cut(tag, "=")
		if k == key {
			return v
		}
	}
	return ""
}

// has says whether the client received message seq, live or from
// history.
func (c *flowClient) has(seq int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	bit := uint64(1) << (seq % 64)
	return c.seen[seq/64]&bit != 0 || c.hist[seq/64]&bit != 0
}

// hasLive says whether the client received message seq live.
func (c *flowClient) hasLive(seq int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[seq/64]&(1<<(seq%64)) != 0
}

// flowTally is what the clients recorded, summed.
type flowTally struct {
	delivered, acked, early, dups, unknown, refusals int64
	overlap, fromHist                                int64
	latencies, echoes                                []time.Duration
	first                                            []string
}

// take sums the clients' counts and moves their latencies out (so the
// next take sees only what arrived since).
func takeTally(clients []*flowClient) flowTally {
	var t flowTally
	for _, c := range clients {
		c.mu.Lock()
		t.delivered += c.delivered
		t.acked += c.acked
		t.early += c.early
		t.dups += c.dups
		t.overlap += c.overlap
		t.fromHist += c.fromHist
		t.unknown += c.unknown
		t.refusals += c.refusals
		t.latencies = append(t.latencies, c.latencies...)
		t.echoes = append(t.echoes, c.echoes...)
		c.latencies, c.echoes = c.latencies[:0], c.echoes[:0]
		for _, f := range c.first {
			if len(t.first) < maxFirstErrors {
				t.first = append(t.first, f)
			}
		}
		c.mu.Unlock()
	}
	return t
}

// counts sums the clients' delivery and echo counts.
func counts(clients []*flowClient) (delivered, acked int64) {
	for _, c := range clients {
		c.mu.Lock()
		delivered += c.delivered
		acked += c.acked
		c.mu.Unlock()
	}
	return delivered, acked
}

// flowSetup describes how the flow's clients connect and join.
type flowSetup struct {
	dialers   []*dialer // one per node; client i connects to dialers[nodeOf(i)]
	nodeOf    func(i int) int
	channels  []*flowChannel
	channelOf func(i int) int // the channel of client i
	clients   int
	echo      bool // ask for echo-message (required when true)
	// history asks for draft/chathistory and batch (required when true),
	// as a client that catches up after a reconnection does, and has the
	// clients read msgids (flowClient.trackIDs).
	history bool
	// joinReplay, with history, leaves draft/chathistory out: the
	// clients read the server's JOIN replay (a chathistory batch) and make
	// no catch-up, as a client without chathistory does.
	joinReplay  bool
	concurrency int
	timeout     time.Duration
	nickPrefix  string
}

// flowGroup is the clients of a flow.
type flowGroup struct {
	mu      sync.Mutex
	clients []*flowClient // every client ever connected, reconnections included
	nextID  int
}

func (g *flowGroup) all() []*flowClient {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.clients
}

// setupFlow connects, registers and joins every client, setup.concurrency
// at a time; a channel's members join in index order within each batch.
// It returns the clients set up even when it fails, for release.
func setupFlow(ctx context.Context, s flowSetup) (*flowGroup, error) {
	g := &flowGroup{clients: make([]*flowClient, s.clients), nextID: s.clients}
	err := forEachLimited(ctx, s.clients, s.concurrency, func(i int) error {
		ch := s.channels[s.channelOf(i)]
		c, err := connectFlowClient(ctx, s, i, s.nodeOf(i), ch, nil)
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		ch.mu.Lock()
		c.slot = len(ch.members)
		ch.members = append(ch.members, c)
		ch.mu.Unlock()
		g.clients[i] = c
		return nil
	})
	g.clients = compact(g.clients)
	return g, err
}

// connectFlowClient dials node, registers, joins ch and starts the read
// loop of a new client numbered id. prev, when not nil, is the user's
// previous connection: with s.history the new one then catches up from
// history (historyFetch).
func connectFlowClient(ctx context.Context, s flowSetup, id, node int, ch *flowChannel, prev *flowClient) (*flowClient, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	conn, err := s.dialers[node].dial(ctx)
	if err != nil {
		return nil, err
	}
	var want []string
	if s.echo {
		want = append(want, "echo-message")
	}
	switch {
	case s.history && s.joinReplay:
		want = append(want, "batch", "message-tags")
	case s.history:
		want = append(want, historyCaps...)
	}
	caps, err := registerPlain(ctx, conn, s.nickPrefix+strconv.Itoa(id), want...)
	for _, w := range want {
		if err == nil && !contains(caps, w) {
			err = fmt.Errorf("the server did not acknowledge %s, which this scenario needs", w)
		}
	}
	if err != nil {
		conn.close()
		return nil, err
	}
	words := (len(ch.sentAt) + 63) / 64
	c := &flowClient{
		index: id, node: node, ch: ch, conn: conn, echo: s.echo, trackIDs: s.history,
		done: make(chan struct{}), seen: make([]uint64, words), hist: make([]uint64, words),
	}
	if s.history {
		c.recvAt = make([]int64, len(ch.sentAt))
	}
	if prev != nil {
		c.prev = prev
		if s.history && !s.joinReplay {
			c.fetch = newHistoryFetch(ch.name)
		}
	}
	if err := c.join(ctx); err != nil {
		conn.close()
		return nil, err
	}
	if c.fetch != nil {
		last, since := prev.resumePoint()
		if err := conn.writeLines(ctx, c.fetch.firstRequest(last, since)); err != nil {
			conn.close()
			return nil, err
		}
	}
	c.alive.Store(true)
	go c.readLoop()
	return c, nil
}

// resumePoint is where a user's next connection catches up from: the
// last msgid this connection read live, or, when it read none, the time
// the user's first connection joined.
func (c *flowClient) resumePoint() (lastMsgID string, since int64) {
	for p := c; p != nil; p = p.prev {
		p.mu.Lock()
		last := p.lastMsgID
		p.mu.Unlock()
		if last != "" {
			return last, 0
		}
		since = p.joinedAt
	}
	return "", since
}

// historyCaps are the capabilities a client that reads history needs.
var historyCaps = []string{"batch", "draft/chathistory", "message-tags"}

// join joins the client's channel and waits for the end of its NAMES
// (366). A client that tracks msgids records the PRIVMSGs that arrive
// meanwhile (after a reconnection the channel is busy; they are not
// timed), the others skip them as before.
func (c *flowClient) join(ctx context.Context) error {
	if !c.trackIDs {
		if err := joinChannel(ctx, c.conn, c.ch.name); err != nil {
			return err
		}
		c.joinedAt = time.Now().UnixNano()
		return nil
	}
	if err := c.conn.writeLines(ctx, "JOIN "+c.ch.name); err != nil {
		return err
	}
	for {
		line, err := c.conn.readLine(ctx)
		if err != nil {
			return fmt.Errorf("joining %s: %w", c.ch.name, err)
		}
		if _, ok := privmsgText(line); ok {
			c.handleLine(ctx, line)
			continue
		}
		m, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		switch {
		case m.Command == "PING":
			if err := c.conn.writeLines(ctx, pong(m)); err != nil {
				return err
			}
		case m.Command == "ERROR" || contains(joinFailures, m.Command):
			return fmt.Errorf("joining %s: %w: %s", c.ch.name, ErrRefused, line)
		case m.Command == "366":
			c.mu.Lock()
			c.joinedAt = time.Now().UnixNano()
			c.mu.Unlock()
			return nil
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func compact(clients []*flowClient) []*flowClient {
	out := clients[:0]
	for _, c := range clients {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// release QUITs every live client and closes all.
func (g *flowGroup) release() {
	clients := g.all()
	conns := make([]lineConn, len(clients))
	dones := make([]chan struct{}, len(clients))
	for i, c := range clients {
		conns[i], dones[i] = c.conn, c.done
	}
	quitAll(conns, dones)
}

// senderPick chooses the member that sends message seq of ch; nil when
// no member can send.
type senderPick func(ch *flowChannel, seq int, rng *rand.Rand) *flowClient

// pickFirst has the channel's first live member send everything (B3's
// single sender, B11's lone member).
func pickFirst(ch *flowChannel, _ int, _ *rand.Rand) *flowClient {
	ch.mu.RLock()
	defer ch.mu.RUnlock()
	for _, m := range ch.members {
		if m.alive.Load() {
			return m
		}
	}
	return nil
}

// pickRandom has a random live member send.
func pickRandom(ch *flowChannel, _ int, rng *rand.Rand) *flowClient {
	live := ch.liveMembers()
	if len(live) == 0 {
		return nil
	}
	return live[rng.IntN(len(live))]
}

// pacer writes the flow's messages: message k of the run goes to channel
// k mod len(channels), from the member pick chooses.
type pacer struct {
	channels []*flowChannel
	pick     senderPick
	text     func(seq int) string
	tick     time.Duration
	rng      *rand.Rand
	nextCh   int

	sent     atomic.Int64 // messages written
	expected atomic.Int64 // deliveries owed: the other members of the channel at each write
	failed   atomic.Int64 // messages whose write failed
	skipped  atomic.Int64 // messages not sent: no live member, or the record was full
}

// maxTickBatch bounds the messages one tick writes.
const maxTickBatch = 4096

// run writes messages at rate per second for d (open loop: it never waits
// for answers), every tick writing those that fell due, one write per
// sender. It returns when d has passed or ctx ends.
func (p *pacer) run(ctx context.Context, rate float64, d time.Duration) {
	ticker := time.NewTicker(p.tick)
	defer ticker.Stop()
	start := time.Now()
	end := start.Add(d)
	due := 0
	batches := map[*flowClient][]string{}
	var seqs []flowSeqRef
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-ticker.C:
		}
		if now.After(end) {
			now = end
		}
		target := int(now.Sub(start).Seconds() * rate)
		n := min(target-due, maxTickBatch)
		due += n
		clear(batches)
		seqs = seqs[:0]
		for range n {
			ch := p.channels[p.nextCh%len(p.channels)]
			p.nextCh++
			seq := ch.next
			if seq >= len(ch.sentAt) {
				p.skipped.Add(1)
				continue
			}
			from := p.pick(ch, seq, p.rng)
			if from == nil {
				p.skipped.Add(1)
				continue
			}
			ch.next++
			ch.senders[seq] = int32(from.index)
			batches[from] = append(batches[from], "PRIVMSG "+ch.name+" :"+p.text(seq))
			seqs = append(seqs, flowSeqRef{ch, seq, from})
		}
		at := time.Now().UnixNano()
		for _, r := range seqs {
			r.ch.sentAt[r.seq].Store(at)
			p.expected.Add(int64(len(r.ch.liveMembers()) - 1))
		}
		for from, lines := range batches {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := from.conn.writeLines(wctx, lines...)
			cancel()
			if err != nil {
				p.failWrites(seqs, from)
			}
		}
		p.sent.Add(int64(len(seqs)))
		if !now.Before(end) {
			return
		}
	}
}

// flowSeqRef is one message written in a tick.
type flowSeqRef struct {
	ch   *flowChannel
	seq  int
	from *flowClient
}

// failWrites marks the messages of from in this tick as not sent.
func (p *pacer) failWrites(seqs []flowSeqRef, from *flowClient) {
	for _, r := range seqs {
		if r.from == from {
			r.ch.sentAt[r.seq].Store(-1)
			p.failed.Add(1)
			p.expected.Add(-int64(len(r.ch.liveMembers()) - 1))
		}
	}
}

// waitFor polls done every 10 ms until it holds, timeout passes or ctx
// ends, and returns the time waited.
func waitFor(ctx context.Context, timeout time.Duration, done func() bool) time.Duration {
	return pollFor(ctx, timeout, 10*time.Millisecond, done)
}

// pollFor checks done every interval until it holds, timeout passes or
// ctx ends, and returns the time waited.
func pollFor(ctx context.Context, timeout, every time.Duration, done func() bool) time.Duration {
	start := time.Now()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-deadline.C:
			return time.Since(start)
		case <-ticker.C:
		}
	}
	return time.Since(start)
}
