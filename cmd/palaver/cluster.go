package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/palaver-chat/palaver/raft/trust"
)

const clusterUsage = `Usage: palaver cluster secret <command>

The cluster secret file holds the cluster's CAs and gossip keys: whoever holds it can join the
cluster. The first node of a cluster writes one to <data>/cluster/secret; every other node is
started with --cluster-secret FILE.

Commands:
  init --out FILE                  write a new cluster secret
  rotate --in FILE --out NEW       add a new primary CA and gossip key, keeping the old ones trusted
  retire --in FILE --out NEW       keep only the primary CA and the newest gossip key
  show FILE                        list the CAs and gossip keys by fingerprint (never key material)

Rotation: rotate, give NEW to every node and restart them one by one; then retire, give that
file to every node and restart them one by one.

A running cluster: palaver cluster status|members|remove NODE|transfer-leadership [NODE]
(palaver cluster status --help).
`

// runCluster runs `palaver cluster secret ...`.
func runCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "secret" {
		if len(args) > 0 && (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
			fmt.Fprint(stdout, clusterUsage)
			return 0
		}
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	cmd, rest := args[1], args[2:]
	if err := runClusterSecret(cmd, rest, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "palaver cluster secret %s: %v\n", cmd, err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

func runClusterSecret(cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cluster secret "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var in, out string
	switch cmd {
	case "init":
		fs.StringVar(&out, "out", "", "file to write (mode 0600; must not exist)")
	case "rotate", "retire":
		fs.StringVar(&in, "in", "", "the current secret file")
		fs.StringVar(&out, "out", "", "file to write (mode 0600; must not exist)")
	case "show":
	default:
		fmt.Fprint(stderr, clusterUsage)
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if cmd == "show" {
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: want one file", errUsage)
		}
		s, err := trust.Load(fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, s.Describe())
		return nil
	}
	if fs.NArg() != 0 || out == "" || (cmd != "init" && in == "") {
		return fmt.Errorf("%w: see --help", errUsage)
	}
	var s *trust.Secret
	var err error
	switch cmd {
	case "init":
		s, err = trust.Generate()
	case "rotate":
		if s, err = trust.Load(in); err == nil {
			s, err = s.Rotate()
		}
	case "retire":
		if s, err = trust.Load(in); err == nil {
			s = s.Retire()
		}
	}
	if err != nil {
		return err
	}
	if err := s.Save(out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s:\n%s", out, s.Describe())
	return nil
}
