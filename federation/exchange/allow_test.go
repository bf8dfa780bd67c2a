package exchange

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestTrustLevels(t *testing.T) {
	for _, tc := range []struct {
		trust                         Trust
		message, changeState, checked bool
	}{
		{TrustCluster, true, false, false},
		{TrustFull, true, true, true},
		{TrustRelay, true, false, true},
		{TrustReadonly, false, false, true},
		{Trust("bogus"), false, false, true},
	} {
		if got := tc.trust.MayMessage(); got != tc.message {
			t.Errorf("%s: MayMessage = %v", tc.trust, got)
		}
		if got := tc.trust.MayChangeState(); got != tc.changeState {
			t.Errorf("%s: MayChangeState = %v", tc.trust, got)
		}
		if got := tc.trust.Checked(); got != tc.checked {
			t.Errorf("%s: Checked = %v", tc.trust, got)
		}
	}
}

func TestParseServerTrust(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Trust
		ok   bool
	}{
		{"full", TrustFull, true},
		{" Relay ", TrustRelay, true},
		{"READONLY", TrustReadonly, true},
		{"cluster", "", false}, // given by membership, never configured
		{"", "", false},
		{"admin", "", false},
	} {
		got, err := ParseServerTrust(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseServerTrust(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestNewAllowListRefusesBadServers(t *testing.T) {
	ok := Member{DID: "did:web:b.example", BaseURL: "https://b.example", Trust: TrustFull}
	for _, tc := range []struct {
		name    string
		servers []Member
		want    string
	}{
		{"no base URL", []Member{{DID: "did:web:b.example", Trust: TrustFull}}, "base URL"},
		{"no DID", []Member{{BaseURL: "https://b.example", Trust: TrustFull}}, "DID"},
		{"cluster trust", []Member{{DID: "did:web:b.example", BaseURL: "https://b.example", Trust: TrustCluster}}, "want full, relay or readonly"},
		{"no trust", []Member{{DID: "did:web:b.example", BaseURL: "https://b.example"}}, "want full, relay or readonly"},
		{"twice", []Member{ok, ok}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewAllowList(nil, tc.servers); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestAllowListHoldsNodesAndServers(t *testing.T) {
	nodes := []Peer{{DID: "did:web:n3", BaseURL: "https://10.0.0.3:7000"}, {DID: "did:web:n2", BaseURL: "https://10.0.0.2:7000"}}
	a, err := NewAllowList(func() []Peer { return nodes }, []Member{
		{DID: "did:web:z.example", BaseURL: "https://z.example", Trust: TrustReadonly},
		{DID: "did:web:b.example", BaseURL: "https://b.example", Trust: TrustRelay},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range a.Members() {
		got = append(got, m.DID+"="+string(m.Trust))
	}
	want := "did:web:n2=cluster did:web:n3=cluster did:web:b.example=relay did:web:z.example=readonly"
	if strings.Join(got, " ") != want {
		t.Fatalf("members = %v, want %s", got, want)
	}
	if m, ok := a.Node("did:web:n3"); !ok || m.Trust != TrustCluster || m.BaseURL != "https://10.0.0.3:7000" {
		t.Fatalf("Node(n3) = %+v, %v", m, ok)
	}
	if _, ok := a.Node("did:web:b.example"); ok {
		t.Fatal("a server passed as a node")
	}
	if _, ok := a.Server("did:web:n2"); ok {
		t.Fatal("a node passed as a server")
	}
	if m, ok := a.Server("did:web:b.example"); !ok || m.Trust != TrustRelay {
		t.Fatalf("Server(b) = %+v, %v", m, ok)
	}
	nodes = nodes[:1] // n2 left: the list follows membership
	if _, ok := a.Node("did:web:n2"); ok {
		t.Fatal("a departed node is still listed")
	}

	var series []string
	for _, m := range gatherOne(t, a, "palaver_exchange_peer") {
		labels := labelsOf(m)
		series = append(series, fmt.Sprintf("%s=%s:%g", labels["peer"], labels["trust"], m.GetGauge().GetValue()))
	}
	if got, want := strings.Join(series, " "), "did:web:b.example=relay:1 did:web:n3=cluster:1 did:web:z.example=readonly:1"; got != want {
		t.Fatalf("series %s, want %s", got, want)
	}

	var empty *AllowList
	if len(empty.Members()) != 0 || len(empty.Nodes()) != 0 {
		t.Fatal("a nil allow-list lists peers")
	}
}

// gatherOne collects c, which must export the one family name, and returns its series.
func gatherOne(t *testing.T, c prometheus.Collector, name string) []*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != name {
		t.Fatalf("gathered %v, %v; want the family %s", families, err, name)
	}
	return families[0].GetMetric()
}

// labelsOf maps a series' label names to their values.
func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}
