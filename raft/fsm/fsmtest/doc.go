// Package fsmtest builds replicated states for tests outside raft/fsm and in its modules: a
// Machine driven through encoded log entries, as Raft would drive it, so fixtures hold only states
// Apply can reach. A test applies a module's commands by importing the module, which registers it.
package fsmtest
