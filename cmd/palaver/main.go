package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const version = "0.1.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "login":
		return runLogin(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "verify":
		return runVerify(ctx, args[1:], stdout, stderr)
	case "testcluster":
		return runTestCluster(ctx, args[1:], stdout, stderr)
	case "cluster":
		if len(args) > 1 && clusterOps[args[1]] {
			return runClusterOp(ctx, args[1], args[2:], stdout, stderr)
		}
		return runCluster(args[1:], stdout, stderr)
	case "backup":
		return runBackup(ctx, args[1:], stdout, stderr)
	case "restore":
		return runRestore(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "palaver", version)
		return 0
	case "help", "--help", "-h":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "palaver: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: palaver <command> [flags]

Commands:
  serve     run a node (no flags: one-node cluster on loopback, data in ./data)
  login     log in as an agent with a self-minted did:key and print the bearer token
  bench     run a load scenario from the benchmark plan (B1, B2) against a server
  verify    check an evidence bundle offline (palaver verify bundle.json)
  testcluster  run N in-process nodes under a seeded nemesis and check linearizability,
            exactly-once delivery and equal state (palaver testcluster --nodes 3 --duration 60s --chaos)
  cluster   the cluster secret file (palaver cluster secret init|rotate|retire|show), and a running
            cluster (palaver cluster status|members|remove NODE|transfer-leadership [NODE])
  backup    write a running node's backup archive (palaver backup --out FILE --cluster-secret FILE)
  restore   build a node's data directory from a backup archive (palaver restore --in FILE --data-dir DIR)
  version   print the version

Run 'palaver <command> --help' for the flags of a command.
`)
}
