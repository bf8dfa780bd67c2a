package irc

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// discardConn is a transport.Conn that counts what it is given.
type discardConn struct{ lines atomic.Int64 }

func (c *discardConn) ReadLine() ([]byte, error)       { return nil, net.ErrClosed }
func (c *discardConn) WriteLines(lines [][]byte) error { c.lines.Add(int64(len(lines))); return nil }
func (c *discardConn) TryWrite(p []byte) (int, error)  { c.lines.Add(1); return len(p), nil }
func (c *discardConn) Close() error                    { return nil }
func (c *discardConn) RemoteAddr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *discardConn) Kind() string                    { return "tcp" }

// BenchmarkFanOut is the delivery of one channel PRIVMSG (the tags the
// server adds, a 100-byte text) to every member of a channel: one
// serialization per tag variant and one post per member, as in B3 (and
// B4 for 10 members, whose idle connections the sender writes to itself).
// Members alternate between two capability sets.
func BenchmarkFanOut(b *testing.B) {
	for _, members := range []int{10, 1000} {
		b.Run("members="+strconv.Itoa(members), func(b *testing.B) {
			queues := make([]*sendQueue, members)
			caps := make([]capBits, members)
			for i := range queues {
				queues[i] = newSendQueue(&discardConn{}, 1<<30, func() {})
				caps[i] = capMessageTags | capServerTime
				if i%2 == 1 {
					caps[i] |= capAccountTag
				}
			}
			text := strings.Repeat("x", 100)
			b.ReportAllocs()
			for b.Loop() {
				o := &outMsg{
					msg:  ircmsg.Message{Source: "alice!a@palaver", Command: "PRIVMSG", Params: []string{"#bench", text}},
					time: "2024-05-01T12:00:00.000Z", msgid: "01HXZ3K9Q8W2ABCDEFGHJKMNPQ", account: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
				}
				for i, q := range queues {
					q.post(o.bytesFor(caps[i]), members <= inlineFanOut)
				}
			}
			b.ReportMetric(float64(members)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
