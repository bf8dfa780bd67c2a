package node

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft"
)

// ClusterAddr is the advertised address of the node's cluster listener ("" unclustered).
func (n *Node) ClusterAddr() string { return n.raft.ClusterAddr() }

// operatorReport is the node layer's part of this node's report to the operator plane
// (`palaver cluster status`, raft's operator.go): its version and its place in the event exchange.
type operatorReport struct {
	cfg      Config
	log      *slog.Logger
	events   *eventstore.Store
	raft     *raft.Store
	exchange *exchange.Exchange
}

func (o operatorReport) report(ctx context.Context) raft.NodeExtra {
	extra := raft.NodeExtra{Version: o.cfg.Version, InCursors: map[string]int64{}}
	if head, err := o.logHead(ctx); err == nil {
		extra.LogHead = head
	} else {
		o.log.Warn("operator report: own log head", "err", err)
	}
	for _, m := range o.raft.Members() {
		if m.Self {
			continue
		}
		if messages, _, _, err := o.exchange.Cursors(ctx, m.NodeID); err == nil {
			extra.InCursors[m.NodeID] = messages
		}
	}
	return extra
}

// logHead is the seq of the newest message of this node's own messages log (0 when empty): a
// galloping search over "is there a seq after x", one indexed query per step, so it costs
// about 2·log2(head) queries whatever the size of the store.
func (o operatorReport) logHead(ctx context.Context) (int64, error) {
	after := func(x int64) (int64, bool, error) {
		seqs, err := o.events.OriginSeqs(ctx, o.cfg.NodeName, x, math.MaxInt64, 1)
		if err != nil || len(seqs) == 0 {
			return 0, false, err
		}
		return seqs[0], true, nil
	}
	// lo is a seq known to exist (or 0); hi has no seq after it.
	var lo, hi int64
	for step := int64(1); ; step *= 2 {
		s, ok, err := after(lo + step - 1)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = lo + step - 1
			break
		}
		lo = s
		if step > math.MaxInt64/4 {
			return lo, nil
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		s, ok, err := after(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = s
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// registerOperatorGauges exports what an operator's alerts watch beyond registerGauges.
func registerOperatorGauges(mset *metrics.Set, cfg Config, rf *raft.Store, report operatorReport) {
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	mset.GaugeFunc("palaver_raft_has_leader", "1 when this node knows a Raft leader.",
		func() float64 { return bool01(rf.Status().LeaderID != "") })
	mset.GaugeFunc("palaver_raft_is_leader", "1 when this node is the Raft leader.",
		func() float64 { return bool01(rf.Status().Role == "leader") })
	mset.GaugeFunc("palaver_raft_commit_index", "Raft commit index this node knows.",
		func() float64 { return float64(rf.Status().CommitIndex) })
	mset.GaugeFunc("palaver_raft_voters_alive", "Voters of the Raft configuration that gossip reports alive, as this node sees them.",
		func() float64 {
			alive := 0
			for _, m := range rf.Members() {
				if m.Suffrage == raft.Voter && m.State == raft.MemberAlive {
					alive++
				}
			}
			return float64(alive)
		})
	mset.GaugeFunc("palaver_raft_last_contact_seconds", "Seconds since this node last heard from a Raft leader (0 on the leader, -1 never).",
		func() float64 {
			ago, ok := rf.LeaderContact()
			if !ok {
				return -1
			}
			return ago.Seconds()
		})
	if _, ok := rf.CertificateExpiry(); ok {
		mset.GaugeFunc("palaver_cluster_certificate_expiry_timestamp_seconds",
			"Unix time at which this node's cluster certificate ends (the end of the cluster CA that issued it).",
			func() float64 {
				t, _ := rf.CertificateExpiry()
				return float64(t.Unix())
			})
	}
	if diskStatsSupported {
		mset.GaugeFunc("palaver_data_dir_available_bytes", "Bytes available to the node on the file system of its data directory.",
			func() float64 { avail, _ := diskStats(cfg.DataDir); return float64(avail) })
		mset.GaugeFunc("palaver_data_dir_size_bytes", "Size in bytes of the file system of the node's data directory.",
			func() float64 { _, size := diskStats(cfg.DataDir); return float64(size) })
	}
	mset.Registry.MustRegister(exchangeCollector{report})
}

var (
	logHeadDesc = prometheus.NewDesc("palaver_exchange_log_head",
		"Seq of the newest message of this node's own messages log.", []string{"node"}, nil)
	inCursorDesc = prometheus.NewDesc("palaver_exchange_in_cursor",
		"How far this node stored an origin node's messages log (its seq).", []string{"node", "origin"}, nil)
)

// exchangeCollector exports the node's own log head and its cursors over the other nodes' logs:
// head(origin) − cursor(node, origin) across nodes is how far node is behind origin.
type exchangeCollector struct{ report operatorReport }

func (c exchangeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- logHeadDesc
	ch <- inCursorDesc
}

func (c exchangeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	extra := c.report.report(ctx)
	self := c.report.cfg.NodeName
	ch <- prometheus.MustNewConstMetric(logHeadDesc, prometheus.GaugeValue, float64(extra.LogHead), self)
	for origin, seq := range extra.InCursors {
		ch <- prometheus.MustNewConstMetric(inCursorDesc, prometheus.GaugeValue, float64(seq), self, origin)
	}
}
