package ircmsg

import (
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{"command only", Message{Command: "QUIT"}, "QUIT"},
		{"middle only", Message{Command: "PING", Params: []string{"srv"}}, "PING srv"},
		{"trailing with space", Message{Source: "srv", Command: "001", Params: []string{"n", "Welcome home"}}, ":srv 001 n :Welcome home"},
		{"empty last param", Message{Command: "TOPIC", Params: []string{"#c", ""}}, "TOPIC #c :"},
		{"last param starting with colon", Message{Command: "PRIVMSG", Params: []string{"#c", ":)"}}, "PRIVMSG #c ::)"},
		{"force trailing", Message{Command: "PRIVMSG", Params: []string{"#c", "hi"}, ForceTrailing: true}, "PRIVMSG #c :hi"},
		{"force trailing without params", Message{Command: "QUIT", ForceTrailing: true}, "QUIT"},
		{
			"tags sorted and escaped",
			Message{
				Tags:    map[string]string{"time": "t", "msgid": "m", "+x": "a b;c", "flag": ""},
				Source:  "n!u@h",
				Command: "PRIVMSG",
				Params:  []string{"#c", "hi"},
			},
			`@+x=a\sb\:c;flag;msgid=m;time=t :n!u@h PRIVMSG #c hi`,
		},
		{"empty tag map", Message{Tags: map[string]string{}, Command: "X"}, "X"},
		{"line breaks neutralised", Message{Command: "PRIVMSG", Params: []string{"#c", "a\r\nQUIT"}}, "PRIVMSG #c :a  QUIT"},
		{"line break in middle-looking last param", Message{Command: "NICK", Params: []string{"a\nb"}}, "NICK :a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.msg.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := string(tt.msg.AppendTo([]byte("prefix"))); got != "prefix"+tt.want+"\r\n" {
				t.Errorf("AppendTo() = %q, want %q", got, "prefix"+tt.want+"\r\n")
			}
		})
	}
}

func TestManyTagsSorted(t *testing.T) {
	var m Message
	m.Command = "TAGMSG"
	keys := "qwertyuiopasdfghjklzxcvbnm"
	for i := range len(keys) {
		m.SetTag(keys[i:i+1], "")
	}
	want := "@a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q;r;s;t;u;v;w;x;y;z TAGMSG"
	if got := m.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
