package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Outcome is what becomes of an event made elsewhere. The values are the federation wire's.
type Outcome string

const (
	Accepted  Outcome = "stored"       // apply it
	Duplicate Outcome = "duplicate"    // applied before: nothing to do
	Wait      Outcome = "wait"         // its message is not here yet: try again later
	Malformed Outcome = "malformed"    // it names its message inconsistently
	NotAuthor Outcome = "not-author"   // an edit by someone else than the author
	NotOp     Outcome = "not-op"       // a delete by neither the author nor an operator
	Unsigned  Outcome = "unauthorised" // a mutation without the signature it needs
	NoRoot    Outcome = "no-root"      // a reaction from a federated server to a message not held here
)

// Roots is the event store as the acceptance rules read it.
type Roots interface {
	Root(ctx context.Context, msgid string) (eventstore.Message, error)
}

// Authority checks what a federated server may not vouch for itself: nil for a node of this
// cluster, which checked the event against the same replicated state before storing it.
type Authority struct {
	// IsOp reports whether did is an operator of venue here.
	IsOp func(venue, did string) bool
	// Signature checks the event's signature given its root: Accepted, or why not (Unsigned, or
	// the caller's own outcome for an invalid signature).
	Signature func(root eventstore.Message) Outcome
}

// IsAuthor is the authorship rule: an authenticated author is matched by DID, a guest by nick
// (folded), and neither matches the other.
func IsAuthor(root eventstore.Message, did, nick string) bool {
	if root.SenderDID != "" {
		return did == root.SenderDID
	}
	return did == "" && nick != "" && fsm.Fold(root.SenderNick) == fsm.Fold(nick)
}

// The acceptance rules take an event made elsewhere as the type the store files it as (one type
// per item: eventstore.Message for a message or an edit, eventstore.Deletion, and
// eventstore.ReactionEvent), with the Authority of where it came from: nil for a node of this
// cluster, else a federated server's.

// AcceptDeletion applies the rules a delete made elsewhere meets before it is applied here: its
// message is here (else Wait), in the venue it names (else Malformed), not deleted yet (else
// Duplicate); and, from a federated server, deleted by its author (by DID, or a guest's by the
// nick of the delete's sender mask) or an operator here (else NotOp), naming the root in its
// +draft/delete tag (else Malformed), with a signature that authorises it. It returns the root for
// an Accepted delete; it changes nothing.
func AcceptDeletion(ctx context.Context, store Roots, d eventstore.Deletion, auth *Authority) (eventstore.Message, Outcome, error) {
	root, err := store.Root(ctx, d.RootMsgID)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return root, Wait, nil
	case err != nil:
		return root, "", fmt.Errorf("chat: delete of %s: %w", d.RootMsgID, err)
	case root.Venue != d.Venue || root.MsgID != d.RootMsgID:
		return root, Malformed, nil
	case !root.DeletedAt.IsZero():
		return root, Duplicate, nil
	case auth == nil:
		return root, Accepted, nil
	}
	nick, _, _ := strings.Cut(d.Sender, "!")
	if !IsAuthor(root, d.SenderDID, nick) && !auth.IsOp(d.Venue, d.SenderDID) {
		return root, NotOp, nil
	}
	if d.Tags["+draft/delete"] != root.MsgID {
		return root, Malformed, nil
	}
	if o := auth.Signature(root); o != Accepted {
		return root, o, nil
	}
	return root, Accepted, nil
}

// AcceptEdit applies the rules an edit (m, whose ReplacesMsgID names its root) made elsewhere
// meets before it is stored here. From a cluster node (auth nil) every edit is stored: the store
// links an edit that arrives before its root. From a federated server the root must be here (else
// Wait), in the edit's venue and named by +draft/edit (else Malformed), written by the editor's
// DID (else NotAuthor), and the signature must authorise it.
func AcceptEdit(ctx context.Context, store Roots, m *eventstore.Message, auth *Authority) (Outcome, error) {
	if auth == nil {
		return Accepted, nil
	}
	root, err := store.Root(ctx, m.ReplacesMsgID)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return Wait, nil
	case err != nil:
		return "", fmt.Errorf("chat: edit of %s: %w", m.ReplacesMsgID, err)
	case root.Venue != m.Venue || root.MsgID != m.ReplacesMsgID || m.Tags["+draft/edit"] != root.MsgID:
		return Malformed, nil
	case root.SenderDID == "" || !IsAuthor(root, m.SenderDID, ""):
		return NotAuthor, nil
	}
	return auth.Signature(root), nil
}

// AcceptReaction applies the rules a reaction made elsewhere meets before it is filed here. From
// a cluster node (auth nil) every reaction is filed: filing finds its message, or the reaction
// waits for it. From a federated server the message must be here (else NoRoot: a reaction is not
// kept for later), in the reaction's venue, under that msgid and not deleted (else Malformed),
// and the signature must speak for the reactor.
func AcceptReaction(ctx context.Context, store Roots, r eventstore.ReactionEvent, auth *Authority) (Outcome, error) {
	if auth == nil {
		return Accepted, nil
	}
	root, err := store.Root(ctx, r.Root)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return NoRoot, nil
	case err != nil:
		return "", fmt.Errorf("chat: reaction to %s: %w", r.Root, err)
	case root.Venue != r.Venue || root.MsgID != r.Root || !root.DeletedAt.IsZero():
		return Malformed, nil
	}
	return auth.Signature(root), nil
}
