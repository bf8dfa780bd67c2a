package irc

import (
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestOutMsgRendersEachVariantOnce: bytesFor renders a variant on first use and hands the same
// bytes to every later client of that variant, however many variants a message goes out in (the
// first two are kept inline, the rest beside them); each variant's bytes are the message as a
// client of those capabilities must see it.
func TestOutMsgRendersEachVariantOnce(t *testing.T) {
	o := &outMsg{
		msg:  ircmsg.Message{Source: "alice!a@host", Command: "PRIVMSG", Params: []string{"#c", "hi there"}, ForceTrailing: true},
		time: "2026-11-29T12:00:00.000Z", msgid: "01JX0000000000000000000000", account: "did:plc:alice",
		clientTags: map[string]string{"+draft/reply": "01JW0000000000000000000000"},
	}
	plain := ":alice!a@host PRIVMSG #c :hi there\r\n"
	tags := capMessageTags
	timed := capServerTime
	all := capMessageTags | capServerTime | capAccountTag
	steps := []struct {
		caps capBits
		want string
	}{
		{0, plain},
		{timed, "@time=2026-11-29T12:00:00.000Z " + plain},
		{all, "@+draft/reply=01JW0000000000000000000000;account=did:plc:alice;msgid=01JX0000000000000000000000;time=2026-11-29T12:00:00.000Z " + plain},
		{0, plain},
		{tags, "@+draft/reply=01JW0000000000000000000000;msgid=01JX0000000000000000000000 " + plain},
		{all, "@+draft/reply=01JW0000000000000000000000;account=did:plc:alice;msgid=01JX0000000000000000000000;time=2026-11-29T12:00:00.000Z " + plain},
		{timed, "@time=2026-11-29T12:00:00.000Z " + plain},
	}
	first := map[int][]byte{}
	for i, st := range steps {
		got := o.bytesFor(st.caps)
		if string(got) != st.want {
			t.Fatalf("step %d (caps %b): got %q, want %q", i, st.caps, got, st.want)
		}
		v := variantOf(st.caps)
		if prev, ok := first[v]; ok {
			if &prev[0] != &got[0] {
				t.Errorf("step %d: variant %d rendered again", i, v)
			}
			continue
		}
		first[v] = got
	}
	if n := len(o.moreRendered); n != 2 {
		t.Errorf("%d variants kept beside the inline two, want 2", n)
	}
}
