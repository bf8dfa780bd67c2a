package node

import (
	"context"
	_ "embed"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const chromiumPath = "/usr/bin/chromium"

//go:embed testdata/call.html
var callPage []byte

// keyframe is a VP8 keyframe of 150×100 pixels (the image of the lossy WebP
// blue-purple-pink.lossy.webp from golang.org/x/image's test data, BSD-licensed like Go).
//
//go:embed testdata/keyframe.vp8
var keyframe []byte

// browserResult is window.result of testdata/call.html.
type browserResult struct {
	State         string   `json:"state"`
	FramesDecoded int      `json:"framesDecoded"`
	Streams       []string `json:"streams"`
	Errors        []string `json:"errors"`
	Closed        string   `json:"closed"`
}

// TestAVBrowserReceivesVideo joins a call from headless Chromium with a fake camera: the browser
// decodes a Go participant's video and the Go participant receives the browser's.
func TestAVBrowserReceivesVideo(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no Chromium at %s (Debian package chromium)", chromiumPath)
		}
		t.Fatalf("CI needs Chromium at %s: %v", chromiumPath, err)
	}
	n := startNode(t, t.TempDir(), avLoopback)
	base := "http://" + n.HTTPAddr()
	alice, ares := login(t, n, "alice", "message-tags")
	bob, bres := login(t, n, "bob", "message-tags")
	joinChannels(t, alice, "#call")
	joinChannels(t, bob, "#call")
	call := startCall(t, base, ares.Token, "#call")

	ac := dialCall(t, avAPI(t), callToken(t, base, ares.Token, call.ID, http.StatusOK).SignalingURL, "alice", true)
	ac.SendVideoFrame(keyframe)
	expectAVState(t, bob, "joined", call.ID, "alice")

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(callPage)
	}))
	t.Cleanup(page.Close)
	if !strings.HasPrefix(page.URL, "http://127.0.0.1:") {
		t.Fatalf("page server at %s", page.URL)
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	tok := callToken(t, base, bres.Token, call.ID, http.StatusOK)
	if _, err := chromedp.Run(bctx, chromedp.Navigate(page.URL+"/?ws="+url.QueryEscape(tok.SignalingURL))); err != nil {
		t.Fatalf("open the call page: %v", err)
	}

	// The browser decodes Alice's video.
	var res browserResult
	deadline := time.Now().Add(45 * time.Second)
	for {
		var err error
		if res, err = chromedp.Run(bctx, chromedp.Evaluate[browserResult](`window.result`)); err != nil {
			t.Fatalf("read the page's result: %v", err)
		}
		if len(res.Errors) > 0 {
			t.Fatalf("the page failed: %+v", res)
		}
		if res.FramesDecoded > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser decoded no video: %+v", res)
		}
		if err := waitCtx(bctx, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Streams) != 1 {
		t.Errorf("the browser receives streams %v, want Alice's only", res.Streams)
	}

	// Alice receives the browser's video (and its audio).
	eventually(t, "alice hears the browser", func() bool {
		streams := ac.Streams()
		return len(streams) == 1 && ac.Count(streams[0], "video") >= 30 && ac.Count(streams[0], "audio") >= 30
	})
	if got := getSession(t, base, call.ID).ParticipantCount; got != 2 {
		t.Fatalf("%d participants, want 2", got)
	}
	// Alice leaves first, while the browser still answers: the renegotiation her leaving causes
	// goes to the browser, not to a peer being closed.
	ac.Leave()

	// Removed from the channel, the browser's signalling closes with 4001 and the reason: one
	// Close frame each way, so that the page sees the code rather than an abnormal 1006.
	sendLines(t, alice, "KICK #call bob :enough")
	deadline = time.Now().Add(30 * time.Second)
	for {
		var err error
		if res, err = chromedp.Run(bctx, chromedp.Evaluate[browserResult](`window.result`)); err != nil {
			t.Fatalf("read the page's result: %v", err)
		}
		if res.Closed != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page's signalling WebSocket is still open after the kick: %+v", res)
		}
		if err := waitCtx(bctx, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if res.Closed != "4001 left the channel" || len(res.Errors) > 0 {
		t.Fatalf("the page saw the close as %q with errors %v, want \"4001 left the channel\" and none", res.Closed, res.Errors)
	}
}

// waitCtx waits d unless ctx ends first.
func waitCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return errors.New("the browser's time ran out: " + ctx.Err().Error())
	}
}
