package coord

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// StateReader reads the node's replica of the replicated state.
type StateReader interface {
	Read(f func(*fsm.State))
}

// Proposer proposes a command through Raft and returns its result once applied here.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// Config wires a Service.
type Config struct {
	Options  Options
	State    StateReader
	Proposer Proposer
	// ServerDID is did:web:<server name>: the sender of confirm receipts.
	ServerDID string
	// ServerKey signs confirm receipts; nil writes none.
	ServerKey ed25519.PrivateKey
	// NewID mints event ids (ULIDs).
	NewID func() string
	// Now is the clock of reads (heartbeat health, grant expiry); nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service is the coordination surface of one node.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) *Service {
	cfg.Options = cfg.Options.normalized()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// read runs f on the replica.
func (s *Service) read(f func(*fsm.State)) {
	if s.cfg.State != nil {
		s.cfg.State.Read(f)
	}
}

// Fail is a refusal to answer on IRC as FAIL <command> <code> :<text>.
type Fail struct {
	Command string
	Code    string
	Text    string
}

func (f *Fail) Error() string { return f.Command + " " + f.Code + ": " + f.Text }

func fail(cmd, code, text string) *Fail { return &Fail{Command: cmd, Code: code, Text: text} }

// failCodes maps result codes of the coordination commands to FAIL codes.
var failCodes = map[fsm.Code]struct{ code, text string }{
	fsmcoord.ErrActUnknownKind:         {"UNKNOWN_KIND", "The act kind is not one this server knows"},
	fsmcoord.ErrActUnknownVerb:         {"UNKNOWN_VERB", "The kind lists no transition with this verb"},
	fsmcoord.ErrActTerminalTask:        {"TERMINAL_TASK", "The task is finished"},
	fsmcoord.ErrActIllegalStep:         {"ILLEGAL_STEP", "The verb is not legal from the task's current state"},
	fsmcoord.ErrActWrongSender:         {"WRONG_SENDER", "The sender does not hold the role this transition requires"},
	fsmcoord.ErrActDeadlinePassed:      {"DEADLINE_PASSED", "The event was minted after the offer's deadline"},
	fsmcoord.ErrActClientConfirm:       {"ILLEGAL_STEP", "A confirmation is the server's receipt, never a sender's step"},
	fsmcoord.ErrActReplacesNotOpener:   {"REPLACES_NOT_OPENER", "Only an opener may carry act-replaces"},
	fsmcoord.ErrActReplacesMalformed:   {"REPLACES_MALFORMED", "act-replaces must be a 26-character action id"},
	fsmcoord.ErrActReplacesNotTerminal: {"REPLACES_NOT_TERMINAL", "The action it replaces is not finished"},
	fsmcoord.ErrActMissingRequirement:  {"MISSING_REQUIREMENT", "The transition requires a field the event does not carry"},
	fsmcoord.ErrActAcceptsNotABid:      {"ACCEPTS_NOT_A_BID", "act-accepts names no bid on this action"},
	fsmcoord.ErrActUnknownTask:         {"UNKNOWN_TASK", "act-id names no action filed here"},
	fsmcoord.ErrActWrongVenue:          {"WRONG_VENUE", "The action lives in another venue"},
	fsmcoord.ErrActImmutableEvent:      {"IMMUTABLE_EVENT", "An event with this id is already filed"},
	fsmcoord.ErrCoordFull:              {"LIMIT_REACHED", "A coordination limit of this server is reached"},
	fsmcoord.ErrCoordNotYours:          {"WRONG_SENDER", "It belongs to another account: only a task's requester or assignee, or an agent's parent, may do this"},
	fsmcoord.ErrCoordNotFound:          {"NOT_FOUND", "There is no such entry"},
	fsmcoord.ErrCoordBudget:            {"LIMIT_REACHED", "The coordination budget of this identity or venue is used up"},
	fsm.ErrInvalid:                     {"INVALID_TARGET", "The event is malformed"},
}

// resultFail turns a refused result into a Fail for cmd; nil for OK.
func resultFail(cmd string, res fsm.Result) *Fail {
	if res.Code == fsm.OK || res.Code == fsm.NoChange {
		return nil
	}
	if f, ok := failCodes[res.Code]; ok {
		return fail(cmd, f.code, f.text)
	}
	return fail(cmd, "REFUSED", "Refused: "+res.Code.String())
}

// errTemporary is a proposal that did not reach the log.
var errTemporary = errors.New("temporarily unavailable")

// propose proposes cmd; a failure to reach the log is errTemporary (wrapped).
func (s *Service) propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if s.cfg.Proposer == nil {
		return fsm.Result{}, fmt.Errorf("coord: %w: no proposer", errTemporary)
	}
	res, err := s.cfg.Proposer.Propose(ctx, cmd)
	if err != nil {
		s.cfg.Logger.Warn("coordination proposal failed", "command", fmt.Sprintf("%T", cmd), "err", err)
		return res, fmt.Errorf("coord: %w: %w", errTemporary, err)
	}
	return res, nil
}

// tempFail is the answer to a proposal that failed.
func tempFail(cmd string) *Fail {
	return fail(cmd, "TEMPORARILY_UNAVAILABLE", "The server could not record this now; try again")
}
