package keyresolver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPeerClientGuardsPrivateAddressesUnlessAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	tests := []struct {
		name  string
		allow bool
	}{
		{"guarded by default", false},
		{"allowed by the operator", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := NewPeerClient(PeerClientOptions{AllowPrivateAddresses: tt.allow}).Get(srv.URL)
			if tt.allow {
				if err != nil || resp.StatusCode != http.StatusNoContent {
					t.Fatalf("GET %s = %v, %v", srv.URL, resp, err)
				}
				resp.Body.Close()
				return
			}
			if !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("GET %s reached loopback: %v", srv.URL, err)
			}
		})
	}
}
