package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/trust"
)

const clusterOpsUsage = `Usage: palaver cluster <command> [flags]

Operate a running cluster through any node's cluster listener (--cluster-addr). The operator
proves it holds the cluster secret file (a key derived from its gossip keys, bound to the TLS
session); the node proves the same back. Without the file every command is refused.

Commands:
  status                         every node: role, voter, applied index, lag, last contact,
                                 version, messages behind in the event exchange
  members                        the membership: gossip state, suffrage, leader
  remove NODE                    remove a dead node from the Raft configuration now, instead of
                                 after --dead-node-grace, and end its sessions (refused while
                                 the node is alive: stop it first)
  transfer-leadership [NODE]     hand leadership to NODE (a voter), or to any up-to-date voter

Flags (each also PALAVER_<NAME> in the environment):
`

// clusterOps are the subcommands of palaver cluster that talk to a running node.
var clusterOps = map[string]bool{"status": true, "members": true, "remove": true, "transfer-leadership": true}

// runClusterOp runs `palaver cluster status|members|remove|transfer-leadership`.
func runClusterOp(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6672", "cluster listener `HOST:PORT` of any node (its --cluster-addr)")
	secret := fs.String("cluster-secret", "", "the cluster secret `FILE` (e.g. <data>/cluster/secret of the first node)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", 15*time.Second, "give up after this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), clusterOpsUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := applyEnv(fs); err != nil {
		fmt.Fprintf(stderr, "palaver cluster %s: %v\n", cmd, err)
		return 2
	}
	var target string
	switch {
	case cmd == "remove" && fs.NArg() == 1:
		target = fs.Arg(0)
	case cmd == "transfer-leadership" && fs.NArg() <= 1:
		target = fs.Arg(0)
	case fs.NArg() != 0 || cmd == "remove":
		fs.Usage()
		return 2
	}
	if *secret == "" {
		fmt.Fprintf(stderr, "palaver cluster %s: refused: no credentials: --cluster-secret FILE (or PALAVER_CLUSTER_SECRET) names the cluster secret file\n", cmd)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := clusterOp(ctx, cmd, target, *addr, *secret, *asJSON, stdout); err != nil {
		fmt.Fprintf(stderr, "palaver cluster %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// dialOperator connects to the operator plane of the node at addr with the cluster secret's CA keys.
func dialOperator(ctx context.Context, addr, secretPath string) (*raft.OperatorClient, error) {
	s, err := trust.Load(secretPath)
	if err != nil {
		return nil, fmt.Errorf("refused: no usable credentials: %w", err)
	}
	return raft.DialOperator(ctx, addr, s)
}

func clusterOp(ctx context.Context, cmd, target, addr, secretPath string, asJSON bool, stdout io.Writer) error {
	client, err := dialOperator(ctx, addr, secretPath)
	if err != nil {
		return err
	}
	defer client.Close()
	switch cmd {
	case "status", "members":
		st, err := client.Status(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		}
		if cmd == "members" {
			printMembers(stdout, st)
		} else {
			printStatus(stdout, st)
		}
		return nil
	case "remove":
		if err := client.Remove(ctx, target); err != nil {
			return err
		}
		return report(stdout, asJSON, map[string]string{"removed": target}, "removed %s from the Raft configuration; its sessions are being ended\n", target)
	default: // transfer-leadership
		leader, err := client.TransferLeadership(ctx, target)
		if err != nil {
			return err
		}
		return report(stdout, asJSON, map[string]string{"leader": leader}, "leadership transferred; the leader is now %s\n", leader)
	}
}

func report(w io.Writer, asJSON bool, v any, format string, args ...any) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	_, err := fmt.Fprintf(w, format, args...)
	return err
}

// printStatus prints the summary line and one row per node.
func printStatus(w io.Writer, st *raft.ClusterStatus) {
	alive := 0
	for _, n := range st.Nodes {
		if n.Suffrage == string(raft.Voter) && n.Gossip == string(raft.MemberAlive) {
			alive++
		}
	}
	leader := st.Leader
	if leader == "" {
		leader = "NONE"
	}
	quorum := "ok"
	if alive <= st.Voters/2 {
		quorum = "LOST"
	}
	fmt.Fprintf(w, "cluster %s  leader %s  term %d  voters alive %d/%d (quorum %s)  asked %s\n\n",
		st.ClusterID, leader, st.Term, alive, st.Voters, quorum, st.AskedNode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tROLE\tVOTER\tAPPLIED\tLAG\tLAST CONTACT\tVERSION\tBEHIND")
	for _, n := range st.Nodes {
		voter := map[string]string{"voter": "yes", "nonvoter": "no"}[n.Suffrage]
		if voter == "" {
			voter = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, n.ClusterAddr, n.Role, voter,
			dashUnless(n.Role != "unreachable", strconv.FormatUint(n.AppliedIndex, 10)),
			dashUnless(n.Role != "unreachable", strconv.FormatUint(n.Lag, 10)),
			lastContact(n), dashUnless(n.Version != "", n.Version),
			dashUnless(n.ExchangeBehind >= 0, strconv.FormatInt(n.ExchangeBehind, 10)))
	}
	tw.Flush()
	for _, n := range st.Nodes {
		if n.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", n.Node, n.Error)
		}
	}
}

// printMembers prints one row per member: where it is and what it is.
func printMembers(w io.Writer, st *raft.ClusterStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCLUSTER ADDRESS\tRAFT ADDRESS\tGOSSIP\tSUFFRAGE\tLEADER")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Node, dashUnless(n.ClusterAddr != "", n.ClusterAddr), n.RaftAddr,
			n.Gossip, n.Suffrage, dashUnless(n.Node == st.Leader, "yes"))
	}
	tw.Flush()
}

func lastContact(n raft.NodeReport) string {
	switch {
	case n.Role == "leader":
		return "leader"
	case n.LastContactMS < 0:
		return "-"
	default:
		return (time.Duration(n.LastContactMS) * time.Millisecond).String() + " ago"
	}
}

func dashUnless(ok bool, s string) string {
	if !ok {
		return "-"
	}
	return s
}
