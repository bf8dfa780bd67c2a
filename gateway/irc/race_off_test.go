//go:build !race

package irc

// raceEnabled is set when the race detector runs, which allocates where a plain build does not
// (sync.Pool drops items at random).
const raceEnabled = false
