// Package features links every replicated feature module into the state machine. A module
// registers itself with fsm.Register when its package loads; importing it here, one line, makes
// every node apply its commands and carry its section in snapshots whether or not a gateway of
// the build uses it. Whatever builds a Machine that applies a real log imports this package.
package features
