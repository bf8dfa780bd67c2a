package irc

import (
	"time"

	"golang.org/x/time/rate"
)

// floodState holds a connection's flood limits: 10 commands per second with a burst of 10 (some
// commands are exempt), and 5 PRIVMSG/NOTICE/TAGMSG per 2 seconds.
type floodState struct {
	commands *rate.Limiter
	messages *rate.Limiter
}

func (f *floodState) init(enabled bool) {
	if !enabled {
		return
	}
	f.commands = rate.NewLimiter(rate.Limit(10), 10)
	f.messages = rate.NewLimiter(rate.Every(400*time.Millisecond), 5)
}

func (f *floodState) allowCommand(now time.Time) bool {
	return f.commands == nil || f.commands.AllowN(now, 1)
}

func (f *floodState) allowMessage(now time.Time) bool {
	return f.messages == nil || f.messages.AllowN(now, 1)
}
