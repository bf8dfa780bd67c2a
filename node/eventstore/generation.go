package eventstore

// Generation returns a number that changes after every write that can change what a read returns:
// appends, edits, deletes and reactions (the peer cursors of SetCursor excepted). It is bumped once
// the write has finished, so a reader that notes it before a read and finds the same number later
// may reuse that read's answer: any write the read missed has bumped it since.
func (s *Store) Generation() uint64 { return s.generation.Load() }
