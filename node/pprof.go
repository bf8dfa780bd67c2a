package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves the runtime profiles (net/http/pprof) on their own listener, never on the
// public HTTP server: --pprof-addr is for operators and benchmarks, and should name a loopback
// address.
func (n *Node) startPprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("pprof listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	n.pprofSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.pprofAddr = ln.Addr().String()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.pprofSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("pprof server", "err", err)
		}
	}()
	n.log.Info("serving runtime profiles", "addr", n.pprofAddr)
	return nil
}

// PprofAddr is the address the runtime profiles are served on ("" without --pprof-addr).
func (n *Node) PprofAddr() string { return n.pprofAddr }
