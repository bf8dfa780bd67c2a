package assist

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// Envelope is the answer of every tool and of /agent/session.
type Envelope struct {
	OK             bool            `json:"ok"`
	RequestID      string          `json:"request_id"`
	Diagnosis      Diagnosis       `json:"diagnosis"`
	SafeFacts      []string        `json:"safe_facts"`
	SuggestedFixes []Fix           `json:"suggested_fixes"`
	Redactions     []string        `json:"redactions"`
	Followups      []Followup      `json:"followups"`
	Classification *Classification `json:"classification,omitempty"`
	// Evidence carries structured evidence (the messages of replay_missed_messages).
	Evidence any `json:"evidence,omitempty"`
}

// Diagnosis is the conclusion: a stable code, a sentence and how sure the server is.
type Diagnosis struct {
	Code       string `json:"code"`
	Summary    string `json:"summary"`
	Confidence string `json:"confidence"` // low, medium or high
}

// Fix is one suggested action.
type Fix struct {
	Summary string `json:"summary"`
	Details string `json:"details,omitempty"`
}

// Followup names another tool worth calling.
type Followup struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// Classification says how /agent/session understood a free-form request.
type Classification struct {
	Provider   string `json:"provider"`
	Tool       string `json:"tool,omitempty"`
	Confidence string `json:"confidence"`
	Summary    string `json:"summary,omitempty"`
}

// Confidence levels.
const (
	low    = "low"
	medium = "medium"
	high   = "high"
)

// newRequestID is "req_<unix seconds><4 hex digits>".
func newRequestID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return "req_" + strconv.FormatInt(now.Unix(), 10) + hex.EncodeToString(b[:])
}

// answer builds envelopes.
type answer struct{ e Envelope }

func newAnswer(now time.Time) *answer {
	return &answer{e: Envelope{RequestID: newRequestID(now), SafeFacts: []string{}, SuggestedFixes: []Fix{},
		Redactions: []string{}, Followups: []Followup{}}}
}

func (a *answer) diagnose(ok bool, code, confidence, summary string) *answer {
	a.e.OK, a.e.Diagnosis = ok, Diagnosis{Code: code, Summary: summary, Confidence: confidence}
	return a
}

func (a *answer) fact(f string) *answer {
	a.e.SafeFacts = append(a.e.SafeFacts, f)
	return a
}

func (a *answer) fix(summary, details string) *answer {
	a.e.SuggestedFixes = append(a.e.SuggestedFixes, Fix{Summary: summary, Details: details})
	return a
}

func (a *answer) redact(what string) *answer {
	a.e.Redactions = append(a.e.Redactions, what)
	return a
}

func (a *answer) followup(tool, reason string) *answer {
	a.e.Followups = append(a.e.Followups, Followup{Tool: tool, Reason: reason})
	return a
}
