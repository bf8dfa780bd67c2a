package load

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// indexLagProbe measures B13's index lag while a search load runs: how long
// after a message's echo (the server's acknowledgement that it is stored)
// a search finds it. Every interval it takes the newest acknowledged
// message of the next channel and polls GET /api/v1/search for the
// message's unique word q<seq> until the answer holds its text.
type indexLagProbe struct {
	baseURL  string
	channels []*flowChannel
	interval time.Duration // between probes; default 200 ms
	poll     time.Duration // between two searches for one message; default 5 ms
	timeout  time.Duration // a message not found by then is counted missing; default 10 s
	client   *http.Client

	lags    []time.Duration
	missing int
}

// run starts a probe every interval until stop ends; a probe under way
// then still finishes (bounded by ctx and the timeout), so a slow index
// is measured, not cut off.
func (p *indexLagProbe) run(ctx, stop context.Context) {
	if p.interval <= 0 {
		p.interval = 200 * time.Millisecond
	}
	if p.poll <= 0 {
		p.poll = 5 * time.Millisecond
	}
	if p.timeout <= 0 {
		p.timeout = 10 * time.Second
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: p.timeout}
	}
	defer p.client.CloseIdleConnections()
	probed := make([]int, len(p.channels)) // per channel, the newest seq probed (−1: none)
	for i := range probed {
		probed[i] = -1
	}
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for next := 0; ; next++ {
		select {
		case <-stop.Done():
			return
		case <-ticker.C:
		}
		i := next % len(p.channels)
		ch := p.channels[i]
		seq, ackedAt := newestAcked(ch, probed[i])
		if seq < 0 {
			continue
		}
		probed[i] = seq
		found, ok := p.find(ctx, ch, seq)
		switch {
		case ok:
			p.lags = append(p.lags, max(found.Sub(time.Unix(0, ackedAt)), 0))
		case ctx.Err() == nil:
			p.missing++
		}
	}
}

// newestAcked returns the newest message of ch acknowledged after seq
// after, with the unix ns of its echo; −1 when there is none yet.
func newestAcked(ch *flowChannel, after int) (seq int, ackedAt int64) {
	seq = -1
	for s := after + 1; s < len(ch.ackedAt); s++ {
		at := ch.ackedAt[s].Load()
		if at <= 0 {
			if ch.sentAt[s].Load() == 0 {
				break // not sent yet: nothing newer
			}
			continue // sent, not acknowledged (yet): look further
		}
		seq, ackedAt = s, at
	}
	return seq, ackedAt
}

// find polls the search (pollFor) until its answer holds message seq of ch, and returns when it
// first did.
func (p *indexLagProbe) find(ctx context.Context, ch *flowChannel, seq int) (time.Time, bool) {
	word := "q" + strconv.Itoa(seq)
	path := p.baseURL + "/api/v1/search?channel=" + url.QueryEscape(strings.TrimPrefix(ch.name, "#")) + "&q=" + word
	want := `"` + word + ` ` // the text starts with the word (restText)
	var found time.Time
	pollFor(ctx, p.timeout, p.poll, func() bool {
		if p.searchHolds(ctx, path, want) {
			found = time.Now()
		}
		return !found.IsZero()
	})
	return found, !found.IsZero()
}

// searchHolds reports whether GET path answers 200 with a body containing want.
func (p *indexLagProbe) searchHolds(ctx context.Context, path, want string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), want)
}
