package peering

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/keyresolver"
)

const (
	testPeerDID = "did:web:a.example"
	testSelfDID = "did:web:b.example"
)

// inboundServer serves a Federation's inbound route on a real listener, with one configured peer
// (testPeerDID, whose did:web document holds peerKey) and the given ReadTimeout.
func inboundServer(t *testing.T, peerKey ed25519.PrivateKey, readTimeout time.Duration) string {
	t.Helper()
	mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: peerKey.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"id": testPeerDID, "verificationMethod": []map[string]string{{
		"id": testPeerDID + "#freeq", "type": "Multikey", "controller": testPeerDID, "publicKeyMultibase": mb}}})
	didServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc) }))
	t.Cleanup(didServer.Close)
	_, selfKey, _ := ed25519.GenerateKey(rand.Reader)
	f, err := New(Config{SendEvery: time.Second, CatchUpWindow: 24 * time.Hour, ServerDID: testSelfDID, NodeName: "b1", Key: selfKey, Client: didServer.Client(),
		Peers: []Peer{{DID: testPeerDID, BaseURL: didServer.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	f.Mount(e)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e, ReadTimeout: readTimeout}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// postPartial sends a POST announcing contentLength bytes but writes only the headers and sent
// bytes of body, then reads the answer without sending more. It may run on any goroutine.
func postPartial(t *testing.T, addr, header string, contentLength int64, sent []byte) (*http.Response, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "POST /federation/v1/events HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n", contentLength)
	if header != "" {
		req += EnvelopeHeader + ": " + header + "\r\n"
	}
	if _, err := conn.Write(append([]byte(req+"\r\n"), sent...)); err != nil {
		return nil, err
	}
	return http.ReadResponse(bufio.NewReader(conn), nil)
}

func TestInboundAuthenticatesBeforeReading(t *testing.T) {
	_, peerKey, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	addr := inboundServer(t, peerKey, 10*time.Second)
	body := []byte(strings.Repeat("x", 16<<10)) // the first 16 KiB of a body announced as 64 MiB
	valid := SignEnvelopeHeader(peerKey, testPeerDID, body)
	// The peer's signature over another body, presented with this body's digest.
	other := SignEnvelopeHeader(peerKey, testPeerDID, []byte("other"))
	forged := valid[:strings.Index(valid, ", sig=")] + other[strings.Index(other, ", sig="):]
	tests := []struct {
		name          string
		header        string
		contentLength int64
		status        int
		code          string
	}{
		{"no header", "", 64 << 20, http.StatusBadRequest, CodeMalformed},
		{"malformed header", "signer=" + testPeerDID, 64 << 20, http.StatusBadRequest, CodeMalformed},
		{"unknown sender", SignEnvelopeHeader(otherKey, "did:web:stranger.example", body), 64 << 20, http.StatusForbidden, CodeUnknownPeer},
		{"key not in the peer's document", SignEnvelopeHeader(otherKey, testPeerDID, body), 64 << 20, http.StatusUnauthorized, CodeBadKey},
		{"signature over another digest", forged, 64 << 20, http.StatusUnauthorized, CodeBadSig},
		{"authenticated but over the size limit", valid, MaxEnvelopeBytes + 1, http.StatusRequestEntityTooLarge, CodeMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := postPartial(t, addr, tt.header, tt.contentLength, body)
			if err != nil {
				t.Fatalf("no answer before the body was sent: %v", err)
			}
			defer resp.Body.Close()
			var r Refusal
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Fatalf("answer is not JSON: %v", err)
			}
			if resp.StatusCode != tt.status || r.Code != tt.code || r.Status != tt.status ||
				r.Error != http.StatusText(tt.status) || r.Message == "" || !strings.HasSuffix(r.Documentation, "/api/v1/openapi.json") {
				t.Fatalf("status %d, refusal %+v; want %d with code %s as the Error object", resp.StatusCode, r, tt.status, tt.code)
			}
		})
	}
}

func TestInboundBodyMustMatchTheSignedDigest(t *testing.T) {
	_, peerKey, _ := ed25519.GenerateKey(rand.Reader)
	addr := inboundServer(t, peerKey, 10*time.Second)
	signed, sent := []byte(`{"signer":"a"}`), []byte(`{"signer":"b"}`)
	resp, err := postPartial(t, addr, SignEnvelopeHeader(peerKey, testPeerDID, signed), int64(len(sent)), sent)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r Refusal
	json.NewDecoder(resp.Body).Decode(&r)
	if resp.StatusCode != http.StatusUnauthorized || r.Code != CodeBadSig {
		t.Fatalf("status %d %+v, want 401 %s", resp.StatusCode, r, CodeBadSig)
	}
}

// TestInboundStalledUploadsAreBounded: uploads that stop sending hold nothing for long. An
// unauthenticated one is answered at once without its body being read, however many there are;
// an authenticated one ends at the server's ReadTimeout.
func TestInboundStalledUploadsAreBounded(t *testing.T) {
	_, peerKey, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	addr := inboundServer(t, peerKey, 300*time.Millisecond)
	const stalled = 50
	errs := make(chan error, stalled)
	for i := range stalled {
		go func() {
			resp, err := postPartial(t, addr, SignEnvelopeHeader(otherKey, fmt.Sprintf("did:web:s%d.example", i), []byte("{")),
				32<<20, []byte("{"))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			errs <- err
		}()
	}
	for range stalled {
		if err := <-errs; err != nil {
			t.Fatalf("stalled unauthenticated upload: %v", err)
		}
	}

	body := []byte(`{"signer":"` + testPeerDID + `"`)
	resp, err := postPartial(t, addr, SignEnvelopeHeader(peerKey, testPeerDID, body), 1<<20, body)
	if err == nil {
		resp.Body.Close() // an answer (the read failed at the deadline) is as good as a close
		return
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatal("an authenticated upload that stalled was kept past the read timeout")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("stalled authenticated upload: %v", err)
	}
}

func TestParseEnvelopeHeader(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	valid := SignEnvelopeHeader(key, testPeerDID, []byte("body"))
	digest := valid[strings.Index(valid, "digest="):strings.Index(valid, ", sig=")]
	sig := valid[strings.Index(valid, "sig="):]
	tests := []struct {
		name, value string
		ok          bool
	}{
		{"valid", valid, true},
		{"reordered with spaces", "  " + sig + " ,signer=" + testPeerDID + ",  " + digest, true},
		{"empty", "", false},
		{"too long", valid + ", x=" + strings.Repeat("y", maxEnvelopeHeader), false},
		{"missing sig", "signer=" + testPeerDID + ", " + digest, false},
		{"extra field", valid + ", extra=1", false},
		{"duplicate field", "signer=a, signer=b, " + digest, false},
		{"empty value", "signer=, " + digest + ", " + sig, false},
		{"not name=value", "signer, " + digest + ", " + sig, false},
		{"other digest", "signer=" + testPeerDID + ", digest=sha-512:AAAA, " + sig, false},
		{"short digest", "signer=" + testPeerDID + ", digest=sha-256:AAAA, " + sig, false},
		{"bad signature tag", "signer=" + testPeerDID + ", " + digest + ", sig=rsa:x:y", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseEnvelopeHeader(tt.value)
			if (err == nil) != tt.ok {
				t.Fatalf("parse %q: %v, want ok %v", tt.value, err, tt.ok)
			}
			if tt.ok && (a.signer != testPeerDID || !a.verify(key.Public().(ed25519.PublicKey)) || !a.matches([]byte("body")) || a.matches([]byte("bodz"))) {
				t.Fatalf("parsed %+v does not verify or match", a)
			}
			if !tt.ok && !errors.Is(err, errBadEnvelopeHeader) {
				t.Fatalf("error %v does not wrap errBadEnvelopeHeader", err)
			}
		})
	}
	// A signature is bound to its signer and digest.
	a, _ := parseEnvelopeHeader(strings.Replace(valid, testPeerDID, "did:web:c.example", 1))
	if a.verify(key.Public().(ed25519.PublicKey)) {
		t.Fatal("a header with another signer verified")
	}
}

func FuzzParseEnvelopeHeader(f *testing.F) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	f.Add(SignEnvelopeHeader(key, testPeerDID, []byte("body")))
	f.Add("signer=a, digest=sha-256:, sig=ed25519::")
	f.Add(",,,=")
	f.Fuzz(func(t *testing.T, v string) {
		a, err := parseEnvelopeHeader(v)
		if err != nil {
			return
		}
		if a.signer == "" || len(v) > maxEnvelopeHeader {
			t.Fatalf("accepted %q as %+v", v, a)
		}
		a.verify(key.Public().(ed25519.PublicKey)) // must not panic whatever the signature's length
	})
}
