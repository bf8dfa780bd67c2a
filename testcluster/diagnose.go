package testcluster

import (
	"context"
	"net/http"
	"time"
)

// maxDiagnosed bounds the REST lookups made for lost messages.
const maxDiagnosed = 50

// diagnoseLosses asks each lost message's receiver node (REST single-message lookup) whether it
// stored the message: "no" points at the event exchange (the node never got it), "yes" at
// delivery to the client (live fan-out or CHATHISTORY).
func diagnoseLosses(ctx context.Context, c *Cluster, losses []Loss) {
	client := &http.Client{Timeout: 5 * time.Second}
	names := map[string]int{}
	for i, a := range c.addrs {
		names[a.Name] = i
	}
	for k := range losses {
		if k >= maxDiagnosed {
			return
		}
		l := &losses[k]
		i, ok := names[l.Node]
		if !ok || l.Message.MsgID == "" || !c.Up(i) {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.addrs[i].HTTP+"/api/v1/messages/"+l.Message.MsgID, nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			l.Stored = "yes"
		case http.StatusNotFound:
			l.Stored = "no"
		}
	}
}
