package testcluster

import "github.com/palaver-chat/palaver/testcluster/loopback"

// reservePorts finds n distinct free loopback ports (see package loopback: picked below the
// kernel's ephemeral range, so the many short-lived connections of a busy test machine do not
// take one between the pick and the node's bind). Fixed ports are what let a restarted node come
// back at the address its peers and clients know.
func reservePorts(n int) ([]int, error) { return loopback.Ports(n) }

func loopbackAddr(port int) string { return loopback.Addr(port) }
