package load

import (
	"strconv"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// historyFetch is the catch-up a reconnected B14 client makes, as a real
// client does: after its JOIN it asks CHATHISTORY AFTER the last msgid
// it read live on its previous connection (or, when it read none, the
// time that connection joined), page after page while a page comes back
// full. The messages of those batches count as delivered from history:
// received, but neither timed nor duplicates of a live receipt.
//
// All methods but finished and summary run on the client's read loop.
type historyFetch struct {
	target string
	limit  int

	mu      sync.Mutex
	batch   string // id of the chathistory batch being read
	count   int    // messages in it so far
	last    string // msgid of its last message
	pages   int
	doneAt  int64 // unix ns when the last page ended; 0 while fetching
	failed  bool
	request string // the last CHATHISTORY line written
}

// historyPage is the CHATHISTORY page size a catch-up asks for (the
// server's ISUPPORT CHATHISTORY is 500).
const historyPage = 500

func newHistoryFetch(target string) *historyFetch {
	return &historyFetch{target: target, limit: historyPage}
}

// firstRequest is the first CHATHISTORY line: after lastMsgID, or after
// the time since when the user has been a member when it read nothing.
func (f *historyFetch) firstRequest(lastMsgID string, since int64) string {
	ref := "msgid=" + lastMsgID
	if lastMsgID == "" {
		ref = "timestamp=" + time.Unix(0, since).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.request = f.line(ref)
	return f.request
}

func (f *historyFetch) line(ref string) string {
	return "CHATHISTORY AFTER " + f.target + " " + ref + " " + strconv.Itoa(f.limit)
}

// noteMessage counts a PRIVMSG of batch.
func (f *historyFetch) noteMessage(batch, msgid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if batch == f.batch {
		f.count++
		if msgid != "" {
			f.last = msgid
		}
	}
}

// batchLine follows the BATCH lines: it returns the next CHATHISTORY line
// to write when a full page ended, "" otherwise.
func (f *historyFetch) batchLine(m ircmsg.Message, at int64) string {
	ref := m.Param(0)
	if len(ref) < 2 {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case ref[0] == '+' && m.Param(1) == "chathistory" && f.doneAt == 0:
		f.batch, f.count = ref[1:], 0
	case ref[0] == '-' && ref[1:] == f.batch && f.batch != "":
		f.batch = ""
		f.pages++
		if f.count >= f.limit && f.last != "" {
			f.request = f.line("msgid=" + f.last)
			return f.request
		}
		f.doneAt = at
	}
	return ""
}

// fail ends the catch-up after a FAIL CHATHISTORY.
func (f *historyFetch) fail(at int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.doneAt == 0 {
		f.doneAt, f.failed = at, true
	}
}

// finished says whether the catch-up is over.
func (f *historyFetch) finished() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doneAt != 0
}

// summary returns the pages read, when the catch-up ended (0 while it
// runs) and whether the server refused it.
func (f *historyFetch) summary() (pages int, doneAt int64, failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pages, f.doneAt, f.failed
}
