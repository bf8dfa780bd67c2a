package exchange

import (
	"runtime/debug"
)

// safely runs one unit of the exchange's work (a push batch, one peer's pull, one delivery to
// local sessions). A panic there is logged with its stack and the unit is skipped; the goroutine
// running it, and the node, keep going. It reports whether fn panicked.
func (x *Exchange) safely(what string, fn func(), attrs ...any) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			x.cfg.Logger.Error("panic in the event exchange; skipped", append([]any{"what", what, "panic", r,
				"stack", string(debug.Stack())}, attrs...)...)
			panicked = true
		}
	}()
	fn()
	return false
}
