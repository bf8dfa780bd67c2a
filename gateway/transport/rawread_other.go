//go:build !unix

package transport

import (
	"io"
	"net"
)

// newRawReader has no raw socket reads to offer here: connections are read through net.Conn.
func newRawReader(net.Conn) io.Reader { return nil }

// waiterOf is never called here: newRawReader returns nil.
func waiterOf(io.Reader) inputWaiter { return nil }

// newSocketWaiter has no raw socket to wait on here.
func newSocketWaiter(net.Conn) *socketWaiter { return nil }

// socketWaiter is never made here.
type socketWaiter struct{}

func (*socketWaiter) awaitInput() error { return nil }

// tryWriteSocket is never called here: there is no socketWaiter to call it with.
func tryWriteSocket(*socketWaiter, []byte) (int, error) { return 0, nil }
