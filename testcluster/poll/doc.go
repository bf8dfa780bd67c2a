// Package poll is how tests wait for a condition: poll it with a deadline, never sleep to
// synchronize. It imports nothing of Palaver, so every package's tests can use it.
package poll
