package rest

import (
	"github.com/palaver-chat/palaver/node/eventstore"
)

// Paging by Unix seconds loses messages when a page ends inside a second:
// the client asks for what is strictly before the oldest second it holds,
// and the messages of that second that did not fit are skipped. To make a
// page-by-page walk return every message exactly once, a full page is
// trimmed to whole seconds: the messages of its oldest second are left for
// the next page whenever that second continues past the page. Only a
// second holding more messages than the page size cannot be split this
// way; such a page is served whole, and the rest of that second is
// reachable only through a msgid cursor (/api/v1/history/{channel}).

// fetchSize is how many messages to ask the store for a page of limit:
// one more, to learn whether the page's oldest second continues, unless
// the store's cap does not allow it.
func fetchSize(limit int) int {
	return min(limit+1, eventstore.MaxLimit)
}

// pageIsFull reports whether more messages may follow a fetch of n
// messages for a page of limit: more came back than fit, or exactly the
// page when the store's cap left no room to look one further.
func pageIsFull(n, limit int) bool {
	return n > limit || (n == limit && n > 0 && fetchSize(limit) == limit)
}

// trimOldestFirst makes a page out of got, the newest fetchSize(limit)
// messages before a bound, oldest first.
func trimOldestFirst(got []eventstore.Message, limit int) []eventstore.Message {
	if !pageIsFull(len(got), limit) {
		return got
	}
	var next *eventstore.Message // the newest message left for the next page, if fetched
	if len(got) > limit {
		next = &got[len(got)-limit-1]
		got = got[len(got)-limit:]
	}
	oldest := got[0].Time.Unix()
	if next != nil && next.Time.Unix() != oldest {
		return got // the page ends on a second boundary
	}
	cut := 0
	for cut < len(got) && got[cut].Time.Unix() == oldest {
		cut++
	}
	if cut == len(got) { // one second fills the page
		return got
	}
	return got[cut:]
}

// trimNewestFirst makes a page out of got, the newest fetchSize(limit)
// messages before a bound, newest first.
func trimNewestFirst(got []eventstore.Message, limit int) []eventstore.Message {
	if !pageIsFull(len(got), limit) {
		return got
	}
	var next *eventstore.Message
	if len(got) > limit {
		next = &got[limit]
		got = got[:limit]
	}
	oldest := got[len(got)-1].Time.Unix()
	if next != nil && next.Time.Unix() != oldest {
		return got
	}
	cut := len(got)
	for cut > 0 && got[cut-1].Time.Unix() == oldest {
		cut--
	}
	if cut == 0 {
		return got
	}
	return got[:cut]
}
