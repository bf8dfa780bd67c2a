package exchange

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

func playbackEvent(venue, id string, index uint64) eventstore.ChannelEvent {
	return eventstore.ChannelEvent{Venue: venue, MsgID: id, Time: time.UnixMilli(1_700_000_000_000 + int64(index)).UTC(),
		Index: index, Command: "TOPIC", Source: "alice!a@h", Params: []string{venue, "topic " + id}}
}

// A node fills in, from a peer, the channel events of the entries through an index, page by
// page, and nothing after it; filing again changes nothing. The route refuses bad parameters and
// says so when the node keeps no channel events.
func TestFillChannelEvents(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	ctx := context.Background()
	held := []eventstore.ChannelEvent{playbackEvent("#x", "01A", 3), playbackEvent("#y", "01B", 3), playbackEvent("#x", "01C", 4),
		playbackEvent("#x", "01D", 7), playbackEvent("#y", "01E", 9)}
	if err := a.store.FileChannelEvents(ctx, held); err != nil {
		t.Fatal(err)
	}
	path := channelEventsPath + "?through=9"
	get := func(path string) int {
		req, _ := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
		sign(req.Header, b.key, b.did, http.MethodGet, path, nil, time.Now())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(path); got != http.StatusServiceUnavailable {
		t.Fatalf("a node without channel events answered %d, want 503", got)
	}
	a.x.cfg.Events, b.x.cfg.Events = a.store, b.store
	a.x.cfg.PageSize, b.x.cfg.PageSize = 2, 2
	for _, q := range []struct {
		query string
		want  int
	}{
		{"", http.StatusBadRequest},
		{"?through=-1", http.StatusBadRequest},
		{"?through=9&after_index=x", http.StatusBadRequest},
		{"?through=9&limit=0", http.StatusBadRequest},
		{"?through=9&after_index=3&after_venue=%23x&after_msgid=01A", http.StatusOK},
	} {
		if got := get(channelEventsPath + q.query); got != q.want {
			t.Errorf("%q: status %d, want %d", q.query, got, q.want)
		}
	}
	for range 2 {
		if err := b.x.FillChannelEvents(ctx, 7); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.store.EventsThrough(ctx, eventstore.EventKey{}, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.Venue+" "+e.MsgID)
	}
	if want := []string{"#x 01A", "#y 01B", "#x 01C", "#x 01D"}; !slices.Equal(ids, want) {
		t.Fatalf("filled %v, want %v", ids, want)
	}
	if got[0].Params[1] != "topic 01A" || !got[0].Time.Equal(held[0].Time) || got[0].Source != "alice!a@h" {
		t.Errorf("filled %+v, want %+v", got[0], held[0])
	}
}
