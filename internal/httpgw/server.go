package httpgw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Server serves a set of gateways, one listener each, sharing one Decider
// and one Metrics, and stops them the way a deployment expects: stop
// accepting, let requests in flight finish, then close.
type Server struct {
	servers   []*http.Server
	listeners []net.Listener
	inFlight  atomic.Int64
}

// Listen opens one listener per address (gateway i on addrs[i]) and builds
// its handlers: /metrics, and every other path a rate limited request.
// Nothing is served until Serve.
func Listen(o Options, m *Metrics, addrs []string) (*Server, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	s := &Server{}
	for i, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("gateway %d: %w", i, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		mux.Handle("/", Handler(o, m, i))
		s.listeners = append(s.listeners, ln)
		s.servers = append(s.servers, &http.Server{Handler: s.count(mux), ReadHeaderTimeout: 5 * time.Second})
	}
	return s, nil
}

// count keeps the number of requests in the middle of a handler, so a stop
// can say how many it waited for or cut off.
func (s *Server) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// Addrs returns the listeners' addresses, in gateway order.
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.listeners))
	for i, ln := range s.listeners {
		out[i] = ln.Addr()
	}
	return out
}

// Stopped says how Serve stopped.
type Stopped struct {
	// Drained is how many requests were in flight when the stop began and
	// finished within the drain timeout.
	Drained int64
	// Cut is how many were still in flight when the drain timeout ran out;
	// their connections were closed without an answer.
	Cut int64
	// Took is how long the stop took.
	Took time.Duration
}

// Serve serves until ctx is done, then stops every gateway: listeners
// close at once, idle connections too, and requests in flight get up to
// drain to finish before their connections are closed. A listener that
// fails stops the others and is returned as the error.
func (s *Server) Serve(ctx context.Context, drain time.Duration) (Stopped, error) {
	errc := make(chan error, len(s.servers))
	for i, srv := range s.servers {
		ln := s.listeners[i]
		go func() { errc <- srv.Serve(ln) }()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	start := time.Now()
	st := Stopped{Drained: s.inFlight.Load()}
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	done := make(chan struct{})
	for _, srv := range s.servers {
		go func() {
			srv.Shutdown(dctx)
			done <- struct{}{}
		}()
	}
	for range s.servers {
		<-done
	}
	if dctx.Err() != nil {
		st.Cut = s.inFlight.Load()
		st.Drained = max(st.Drained-st.Cut, 0)
		s.close()
	}
	st.Took = time.Since(start)
	return st, serveErr
}

// close closes every server (and with it its connections) and listener.
func (s *Server) close() {
	for _, srv := range s.servers {
		srv.Close()
	}
	for _, ln := range s.listeners {
		ln.Close()
	}
}
