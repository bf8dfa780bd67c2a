package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DeliveryDetails says which message, which member, which node and when,
// for every B14 delivery that went wrong, and counts them by class. The
// lists keep the first maxDeliveryRecords of each kind; Classes counts all.
type DeliveryDetails struct {
	Classes map[string]int64 `json:"classes,omitempty"`
	// Lost are owed deliveries that never arrived, live or from history.
	Lost []DeliveryRecord `json:"lost,omitempty"`
	// Duplicates are messages a user received live twice.
	Duplicates []DeliveryRecord `json:"duplicates,omitempty"`
	// Late are live deliveries, to a connection, of a message sent before
	// its JOIN completed (and not read from history first).
	Late []DeliveryRecord `json:"late,omitempty"`
	// owed and delivered are counted in the same pass that lists Lost, so
	// the three always agree.
	owed, delivered int64
	// CatchUps are the reconnected users' CHATHISTORY catch-ups: how many
	// ran, the pages they read, how many failed or never ended, and the
	// messages they brought that the user had not read live.
	CatchUps struct {
		Users      int   `json:"users"`
		Pages      int   `json:"pages"`
		Failed     int   `json:"failed"`
		Unfinished int   `json:"unfinished"`
		Messages   int64 `json:"messages"`
		Overlap    int64 `json:"overlap"` // also read live: removed by msgid
	} `json:"catch_ups"`
}

// DeliveryRecord is one delivery that went wrong. Times are milliseconds
// since sending started.
type DeliveryRecord struct {
	Class      string  `json:"class"`
	Channel    string  `json:"channel"`
	Seq        int     `json:"seq"`
	MsgID      string  `json:"msgid,omitempty"`
	Sender     int     `json:"sender"` // connection index
	SenderNode string  `json:"sender_node"`
	SentMS     float64 `json:"sent_ms"`
	AckedMS    float64 `json:"acked_ms"`
	// Connections are the member's connections, oldest first, and
	// ReceivedMS the first receipt of the message on each (0: none).
	Connections []DeliveryConn `json:"connections"`
	ReceivedMS  []float64      `json:"received_ms,omitempty"`
	// StoredOn, for a lost message, lists the nodes whose store has it
	// (GET /api/v1/messages/{msgid}).
	StoredOn []string `json:"stored_on,omitempty"`
}

// DeliveryConn is one connection of a member.
type DeliveryConn struct {
	Index    int     `json:"index"`
	Node     string  `json:"node"`
	JoinedMS float64 `json:"joined_ms"`
	EndedMS  float64 `json:"ended_ms,omitempty"` // 0 while open
}

// maxDeliveryRecords bounds each list of DeliveryDetails.
const maxDeliveryRecords = 200

// maxStoreLookups bounds the lost msgids looked up in the nodes' stores.
const maxStoreLookups = 40

// deliveryTimeline is what the details need to place a delivery in time.
type deliveryTimeline struct {
	start, killedAt, restartedAt int64 // unix ns; 0 when it did not happen
	names                        []string
	killed                       int
	byIndex                      map[int]*flowClient
}

func (tl deliveryTimeline) ms(at int64) float64 {
	if at == 0 {
		return 0
	}
	return float64(at-tl.start) / 1e6
}

func (tl deliveryTimeline) node(i int) string { return nodeLabel(tl.names, i, tl.killed) }

// record builds the record of message seq to user u.
func (tl deliveryTimeline) record(class string, u deliveryUser, seq int) DeliveryRecord {
	ch := u.ch
	r := DeliveryRecord{
		Class: class, Channel: ch.name, Seq: seq, MsgID: ch.msgID(seq), Sender: int(ch.senders[seq]),
		SentMS: tl.ms(ch.sentAt[seq].Load()), AckedMS: tl.ms(ch.ackedAt[seq].Load()),
	}
	if s := tl.byIndex[r.Sender]; s != nil {
		r.SenderNode = tl.node(s.node)
	}
	for _, c := range u.conns {
		r.Connections = append(r.Connections, DeliveryConn{Index: c.index, Node: tl.node(c.node), JoinedMS: tl.ms(c.joinedAt), EndedMS: tl.ms(c.endedAt.Load())})
		var at int64
		c.mu.Lock()
		if c.recvAt != nil {
			at = c.recvAt[seq]
		}
		c.mu.Unlock()
		r.ReceivedMS = append(r.ReceivedMS, tl.ms(at))
	}
	return r
}

// senderNode is the node of the connection that sent seq, -1 when unknown.
func (tl deliveryTimeline) senderNode(ch *flowChannel, seq int) int {
	if s := tl.byIndex[int(ch.senders[seq])]; s != nil {
		return s.node
	}
	return -1
}

// buildDeliveryDetails classifies every lost, duplicated and late delivery.
func buildDeliveryDetails(users []deliveryUser, tl deliveryTimeline) (*DeliveryDetails, int64) {
	d := &DeliveryDetails{Classes: map[string]int64{}}
	add := func(list *[]DeliveryRecord, r DeliveryRecord) {
		d.Classes[r.Class]++
		if len(*list) < maxDeliveryRecords {
			*list = append(*list, r)
		}
	}
	owedTo(users, func(o ownedSeq, u deliveryUser, sentAt int64) {
		d.owed++
		if u.received(o.seq) {
			d.delivered++
			return
		}
		class := classKey("lost", "member "+memberStateAt(u, sentAt)+" on "+tl.node(u.current().node),
			"sender on "+tl.node(tl.senderNode(u.ch, o.seq)), "sent "+phaseOf(sentAt, tl.killedAt, tl.restartedAt))
		add(&d.Lost, tl.record(class, u, o.seq))
	})
	var acrossDups int64
	for _, u := range users {
		for _, c := range u.conns {
			c.mu.Lock()
			events := append([]dupEvent(nil), c.dupEvents...)
			dups := c.dups
			c.mu.Unlock()
			for i, e := range events {
				class := classKey("duplicate", "live twice on one connection to "+tl.node(c.node),
					"sender on "+tl.node(tl.senderNode(u.ch, e.seq)), "sent "+phaseOf(u.ch.sentAt[e.seq].Load(), tl.killedAt, tl.restartedAt))
				r := tl.record(class, u, e.seq)
				r.ReceivedMS = []float64{tl.ms(e.first), tl.ms(e.second)}
				add(&d.Duplicates, r)
				if i == len(events)-1 && dups > int64(len(events)) {
					d.Classes[class] += dups - int64(len(events)) // beyond what the client kept
				}
			}
			if pages, doneAt, failed := fetchSummary(c); c.fetch != nil {
				d.CatchUps.Users++
				d.CatchUps.Pages += pages
				if failed {
					d.CatchUps.Failed++
				} else if doneAt == 0 {
					d.CatchUps.Unfinished++
				}
				c.mu.Lock()
				d.CatchUps.Messages += c.fromHist
				d.CatchUps.Overlap += c.overlap
				c.mu.Unlock()
			}
			tl.lateDeliveries(u, c, func(class string, seq int) { add(&d.Late, tl.record(class, u, seq)) })
		}
		if len(u.conns) < 2 {
			continue
		}
		for seq := range u.ch.sentAt {
			sentAt := u.ch.sentAt[seq].Load()
			if sentAt == 0 {
				break
			}
			live := 0
			for _, c := range u.conns {
				if c.hasLive(seq) {
					live++
				}
			}
			if live >= 2 {
				acrossDups++
				add(&d.Duplicates, tl.record(classKey("duplicate", "live on two connections of one user",
					"sent "+phaseOf(sentAt, tl.killedAt, tl.restartedAt)), u, seq))
			}
		}
	}
	return d, acrossDups
}

func fetchSummary(c *flowClient) (pages int, doneAt int64, failed bool) {
	if c.fetch == nil {
		return 0, 0, false
	}
	return c.fetch.summary()
}

// lateDeliveries reports the messages c received live although they were
// sent before its JOIN completed, classed by when they were sent and
// whether they arrived during the JOIN or after it.
func (tl deliveryTimeline) lateDeliveries(u deliveryUser, c *flowClient, report func(class string, seq int)) {
	c.mu.Lock()
	var seqs []int
	var during []bool
	for seq := range c.ch.sentAt {
		sentAt := c.ch.sentAt[seq].Load()
		if sentAt == 0 {
			break
		}
		bit := uint64(1) << (seq % 64)
		if c.seen[seq/64]&bit == 0 || c.hist[seq/64]&bit != 0 || sentAt <= 0 || sentAt >= c.joinedAt {
			continue
		}
		seqs = append(seqs, seq)
		during = append(during, c.recvAt != nil && c.recvAt[seq] < c.joinedAt)
	}
	c.mu.Unlock()
	which := "first connection"
	if c.prev != nil {
		which = "reconnected"
	}
	for i, seq := range seqs {
		when := "after the JOIN completed"
		if during[i] {
			when = "during the JOIN"
		}
		sentAt := c.ch.sentAt[seq].Load()
		report(classKey("late", which+" on "+tl.node(c.node), "arrived "+when,
			"member "+memberStateAt(u, sentAt)+" when sent", "sent "+phaseOf(sentAt, tl.killedAt, tl.restartedAt)), seq)
	}
}

// lookupStored fills StoredOn for the first lost messages: which nodes'
// stores hold each msgid.
func lookupStored(ctx context.Context, client *http.Client, nodes []ClusterNode, names []string, lost []DeliveryRecord) {
	found := map[string][]string{}
	for i := range lost {
		id := lost[i].MsgID
		if id == "" {
			continue
		}
		where, ok := found[id]
		if !ok {
			if len(found) >= maxStoreLookups {
				continue
			}
			for n, node := range nodes {
				where = append(where, names[n]+": "+storedStatus(ctx, client, node.HTTPURL, id))
			}
			found[id] = where
		}
		lost[i].StoredOn = where
	}
}

// storedStatus asks one node's REST API for a msgid: "stored", "absent"
// or what went wrong.
func storedStatus(ctx context.Context, client *http.Client, baseURL, msgid string) string {
	if baseURL == "" {
		return "unknown"
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/api/v1/messages/"+msgid, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		return "stored"
	case http.StatusNotFound:
		return "absent"
	}
	return fmt.Sprintf("status %d", resp.StatusCode)
}
