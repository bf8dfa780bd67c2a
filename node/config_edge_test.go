package node

import "testing"

func TestHTTPConnCapDefault(t *testing.T) {
	tests := []struct {
		name                  string
		ircCap, httpCap, want int
	}{
		{"defaults", 0, 0, 64},
		{"a small IRC cap keeps 64", 10, 0, 64},
		{"a large IRC cap leaves room for its WebSockets", 100, 0, 132},
		{"unlimited IRC leaves HTTP unlimited", -1, 0, -1},
		{"explicit HTTP cap wins", -1, 8, 8},
		{"explicit unlimited", 20, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{MaxConnsPerIP: tt.ircCap, MaxHTTPConnsPerIP: tt.httpCap}
			c.Defaults()
			if c.MaxHTTPConnsPerIP != tt.want {
				t.Fatalf("MaxHTTPConnsPerIP = %d, want %d", c.MaxHTTPConnsPerIP, tt.want)
			}
		})
	}
}

func TestTrustedProxyValidation(t *testing.T) {
	for _, tt := range []struct {
		proxies []string
		ok      bool
	}{
		{nil, true},
		{[]string{"127.0.0.1", "10.0.0.0/8", "::1"}, true},
		{[]string{"proxy.example"}, false},
		{[]string{"10.0.0.0/40"}, false},
	} {
		c := Config{TrustedProxies: tt.proxies}
		c.Defaults()
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("TrustedProxies %v: Validate = %v, want ok %v", tt.proxies, err, tt.ok)
		}
	}
}
