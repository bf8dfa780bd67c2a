package irc

import "testing"

func TestDisconnectKind(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		closing bool
		want    string
	}{
		{"Ping timeout", false, DisconnectPingTimeout},
		{"SendQ exceeded", false, DisconnectSendQ},
		{"Excess Flood", false, DisconnectFlood},
		{"Killed (admin (spam))", false, DisconnectKill},
		{"Quit", false, DisconnectQuit},
		{"Quit: bye", false, DisconnectQuit},
		{"Quit: Ping timeout", false, DisconnectQuit}, // a user's own words never pass for the server's
		{"Signing key expired", false, DisconnectSigningKey},
		{"Signing key retired", false, DisconnectSigningKey},
		{"Too many SASL failures", false, DisconnectRegistration},
		{panicReason, false, DisconnectServerError},
		{"Server restarted", false, DisconnectRestart},
		{"Node left the cluster", false, DisconnectRestart},
		{"Connection closed", true, DisconnectRestart},
		{"Connection closed", false, DisconnectClosedByPeer},
		{"", false, DisconnectClosedByPeer},
	} {
		if got := DisconnectKind(tc.reason, tc.closing); got != tc.want {
			t.Errorf("DisconnectKind(%q, %v) = %s, want %s", tc.reason, tc.closing, got, tc.want)
		}
	}
}
