// Package trust owns the identity of a cluster and of each node in it: the cluster secret file
// (the cluster's certificate authorities and gossip keys), each node's credentials (its own key
// and the certificate a CA of the cluster issued for it when it enrolled), and the TLS
// configurations every plane between nodes uses (Raft, the cluster RPC and the cluster's HTTP
// plane), which accept only peers holding a certificate of the cluster, pinned to their key once
// the cluster knows it, and tell who they are.
//
// How it works and why: DESIGN.md beside this file.
package trust
