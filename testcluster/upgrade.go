package testcluster

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// stopGrace is how long an upgrade waits for a node to end after SIGTERM before kill -9.
const stopGrace = 30 * time.Second

// binary is the executable node i runs as a process.
func (c *Cluster) binary(i int) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.upgraded[i] {
		return c.opts.Processes.UpgradeTo
	}
	return c.opts.Processes.Binary
}

// Upgraded reports whether node i runs Processes.UpgradeTo.
func (c *Cluster) Upgraded(i int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.upgraded[i]
}

// DataOnDisk is what a stopped node's data directory holds for the version that starts on it.
type DataOnDisk struct {
	SnapshotIndex uint64 // the newest Raft snapshot's last index (0: none)
	Snapshots     int    // Raft snapshots kept
	LogBytes      int64  // the Raft log and stable store (raft/raft-log.db)
	EventBytes    int64  // the message store (events.db)
}

func (d DataOnDisk) String() string {
	snap := "no snapshot"
	if d.Snapshots > 0 {
		snap = fmt.Sprintf("snapshot at %d", d.SnapshotIndex)
	}
	return fmt.Sprintf("%s, raft log %d KiB, message store %d KiB", snap, d.LogBytes>>10, d.EventBytes>>10)
}

// inspectDataDir reads what a node left in dir (<dir>/raft/snapshots/*/meta.json,
// <dir>/raft/raft-log.db, <dir>/events.db).
func inspectDataDir(dir string) (DataOnDisk, error) {
	var d DataOnDisk
	metas, err := filepath.Glob(filepath.Join(dir, "raft", "snapshots", "*", "meta.json"))
	if err != nil {
		return d, err
	}
	for _, path := range metas {
		data, err := os.ReadFile(path)
		if err != nil {
			return d, err
		}
		var meta struct{ Index uint64 }
		if err := json.Unmarshal(data, &meta); err != nil {
			return d, fmt.Errorf("%s: %w", path, err)
		}
		d.Snapshots++
		d.SnapshotIndex = max(d.SnapshotIndex, meta.Index)
	}
	for path, size := range map[string]*int64{
		filepath.Join(dir, "raft", "raft-log.db"): &d.LogBytes,
		filepath.Join(dir, "events.db"):           &d.EventBytes,
	} {
		info, err := os.Stat(path)
		if err != nil {
			return d, err
		}
		*size = info.Size()
	}
	return d, nil
}

// Upgrade replaces node i, a process still running Processes.Binary, with Processes.UpgradeTo
// on the same data directory and addresses: SIGTERM (kill -9 after 30 s), then a start that
// returns once the new version serves. It returns what the old version left on disk for the new
// one to load. Clients of the node see their connections end as at a restart.
func (c *Cluster) Upgrade(ctx context.Context, i int) (DataOnDisk, error) {
	name := c.addrs[i].Name
	if c.opts.Processes == nil || c.opts.Processes.UpgradeTo == "" {
		return DataOnDisk{}, fmt.Errorf("testcluster: upgrade %s: no Processes.UpgradeTo", name)
	}
	c.mu.Lock()
	inst, upgraded := c.nodes[i], c.upgraded[i]
	if inst == nil || upgraded {
		c.mu.Unlock()
		return DataOnDisk{}, fmt.Errorf("testcluster: upgrade %s: not running the previous version", name)
	}
	c.nodes[i] = nil
	c.up[i] = make(chan struct{})
	c.clients[i] = map[*ircclient.Client]struct{}{} // the node ends their connections itself
	c.upgraded[i] = true
	c.mu.Unlock()
	p, ok := inst.(*process)
	if !ok {
		return DataOnDisk{}, errors.New("testcluster: upgrade: the nodes do not run as processes")
	}
	graceful, err := p.terminate(stopGrace)
	if err != nil {
		return DataOnDisk{}, fmt.Errorf("testcluster: upgrade %s: stop: %w", name, err)
	}
	// A node that ignores SIGTERM is killed, started again and reported: a service manager
	// would do the same, but an operator waits for it.
	var stopErr error
	if !graceful {
		stopErr = fmt.Errorf("testcluster: upgrade %s: still running %s after SIGTERM (killed): %s", name, stopGrace, lastLines(p.logPath, 5))
	}
	disk, err := inspectDataDir(c.addrs[i].DataDir)
	if err != nil {
		return disk, fmt.Errorf("testcluster: upgrade %s: data directory: %w", name, err)
	}
	if err := c.Restart(ctx, i); err != nil {
		return disk, fmt.Errorf("testcluster: upgrade %s: %w", name, err)
	}
	return disk, stopErr
}

// ProbeFeatureGate asks node i for a change that nodes of the previous version cannot apply, a
// user's MODE +i (raft/fsm's SetInvisible, feature level 1), as a new guest named nick. While a
// node of the previous version remains, the proposer must refuse it (FAIL MODE
// TEMPORARILY_UNAVAILABLE, saying the server is being upgraded); once every node is upgraded it
// must be accepted, which can take a few tries while gossip tells the nodes of the last one's
// level. It returns what node i answered.
func (c *Cluster) ProbeFeatureGate(ctx context.Context, i int, nick string, wantAccepted bool) (string, error) {
	cl, err := c.Guest(ctx, i, nick)
	if err != nil {
		return "", err
	}
	defer c.Hangup(cl)
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	for {
		if err := cl.Sendf("MODE %s +i", nick); err != nil {
			return "", err
		}
		msg, err := cl.Expect(ctx, func(m ircmsg.Message) bool {
			return m.Command == "MODE" && len(m.Params) == 2 && m.Params[1] == "+i" ||
				m.Command == "FAIL" && len(m.Params) > 0 && m.Params[0] == "MODE"
		})
		if err != nil {
			return "", fmt.Errorf("MODE %s +i on %s: %w", nick, c.addrs[i].Name, err)
		}
		answer := msg.String()
		accepted := msg.Command == "MODE"
		switch {
		case accepted && !wantAccepted:
			return answer, fmt.Errorf("MODE %s +i accepted on %s while a node of the previous version remains: it would stop on the entry", nick, c.addrs[i].Name)
		case !accepted && !strings.Contains(answer, "upgraded"):
			return answer, fmt.Errorf("MODE %s +i on %s: want the upgrade refusal, got %s", nick, c.addrs[i].Name, answer)
		case accepted == wantAccepted:
			return answer, nil
		}
		select { // refused, and every node runs the new version: the last one's level is on its way
		case <-ctx.Done():
			return answer, fmt.Errorf("MODE %s +i on %s still refused with every node upgraded: %w", nick, c.addrs[i].Name, ctx.Err())
		case <-retry.C:
		}
	}
}

// ProbeUpload uploads a small file through node i's REST API as a DID logged in over IRC (SASL
// ATPROTO-CHALLENGE with a new did:key) and returns the upload's id. While a node of the previous
// version remains, the upload must still be taken: node i records it in the previous version's
// shape (gateway/media). Any answer but 200 is an error.
func (c *Cluster) ProbeUpload(ctx context.Context, i int, nick string) (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	cl, err := c.DialIRC(ctx, i)
	if err != nil {
		return "", err
	}
	defer c.Hangup(cl)
	login, err := cl.LoginSASL(ctx, ircclient.NewEd25519Signer(priv), nick)
	if err != nil {
		return "", fmt.Errorf("testcluster: login %s on %s: %w", nick, c.addrs[i].Name, err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("file", "probe.txt")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(part, "an upload through %s during a rolling upgrade\n", c.addrs[i].Name)
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addrs[i].HTTP+"/api/v1/upload", &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+login.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("testcluster: upload on %s: %w", c.addrs[i].Name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("testcluster: upload on %s: %s: %s", c.addrs[i].Name, resp.Status, bytes.TrimSpace(data))
	}
	var up struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &up); err != nil || up.ID == "" {
		return "", fmt.Errorf("testcluster: upload on %s: answer %q without an id", c.addrs[i].Name, data)
	}
	return up.ID, nil
}
