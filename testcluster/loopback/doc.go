// Package loopback picks loopback ports for nodes that tests and benchmarks start and restart at
// fixed addresses.
//
// A port found free is released before the node binds it, and on a busy machine another process
// can take it in between. Ports the kernel hands out by itself (the ephemeral range, used by every
// `:0` listener and every outgoing connection) are the ones taken most: hundreds of test
// connections come and go each second. So ports are picked at random BELOW the ephemeral range,
// where only an explicit bind can land, and each is checked free for TCP and UDP (memberlist
// gossips over both on one port). Written here because no library does this; standard library only.
package loopback
