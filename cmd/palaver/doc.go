// Command palaver is the Palaver server and its tools, one binary with subcommands:
//
//	palaver serve    run a node (with no flags: a one-node cluster on loopback, data in ./data)
//	palaver login    mint or load an ed25519 did:key, log in over SASL, print the bearer token
//	palaver bench    load scenarios of the benchmark plan against any IRC server
//	palaver verify   check an evidence bundle offline
//	palaver testcluster  chaos run of an in-process cluster with its verdict table
//	palaver cluster  the cluster secret file (init, rotate, retire, show) and a running cluster
//	                 (status, members, remove, transfer-leadership)
//	palaver backup   a running node's backup archive; palaver restore builds a data directory from one
//	palaver version  print the version
package main
