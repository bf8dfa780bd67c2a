// Package act owns the rules of ACT actions (freeq.at/act): the task kinds, their openers,
// transitions, roles and terminal states, read as data from freeq's act-transitions.json, and the
// checker that gives an event's verdict (a refusal key, or the action after it). It is pure: no
// clock (an event's time is its own ULID's), no I/O, so the replicated state machine applies it
// and every node reaches the same verdict. The act canonical form and its signature are
// node/signing's (signing.Act).
package act
