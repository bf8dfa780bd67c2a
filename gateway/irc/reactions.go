package irc

import (
	"context"
	"encoding/json"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
)

// A reaction is a TAGMSG carrying +react=<emoji> (or +draft/react) and +reply=<msgid>; an unreact
// carries +freeq.at/unreact=<emoji>. The chat service (node/chat) files them by the root message,
// once per reactor and emoji; history replays them as a +freeq.at/reactions tally.

const tagReactions = "+freeq.at/reactions"

// withReactions adds each message's reaction tally to its tags (as a JSON object of counts).
func withReactions(ctx context.Context, h History, msgs []eventstore.Message) {
	if len(msgs) == 0 {
		return
	}
	roots := make([]string, len(msgs))
	for i := range msgs {
		roots[i] = msgs[i].MsgID
	}
	tallies, err := h.Reactions(ctx, roots)
	if err != nil || len(tallies) == 0 {
		return
	}
	for i := range msgs {
		t := tallies[msgs[i].MsgID]
		if len(t) == 0 {
			continue
		}
		data, err := json.Marshal(t)
		if err != nil {
			continue
		}
		tags := chat.CopyTags(msgs[i].Tags)
		tags[tagReactions] = string(data)
		msgs[i].Tags = tags
	}
}
