//go:build !unix

package transport

import (
	"io"
	"net"
)

// newRawReader has no raw socket reads to offer here: connections are read through net.Conn.
func newRawReader(net.Conn) io.Reader { return nil }
