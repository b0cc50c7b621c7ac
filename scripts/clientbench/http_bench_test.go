package clientbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/target/httptarget"
	"github.com/rlctl/rlctl/internal/traffic"
)

// httpURL is the server the HTTP benchmarks ask: another process (make
// bench starts nginx), so the process's CPU is the client's alone.
func httpURL(b *testing.B) string {
	u := os.Getenv("CLIENTBENCH_URL")
	if u == "" {
		b.Fatal("CLIENTBENCH_URL is not set: name an http:// server in another process (make bench starts nginx)")
	}
	return u
}

// BenchmarkHTTPClient is one limiter-shaped request through each client
// from 50 goroutines over at most 50 keep-alive connections: a GET with
// the identity in X-API-Key, the status and rate-limit headers read, the
// body drained. "raw" is the http target itself (its answers' hints
// parsed, so it does a little more than the libraries); net/http also
// parses hints (ParseHints reads an http.Header); fasthttp reads the two
// headers a limiter answer most often carries.
func BenchmarkHTTPClient(b *testing.B) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%d", i)
	}
	b.Run("raw", func(b *testing.B) {
		tgt, err := httptarget.New(httptarget.Options{URLs: []string{httpURL(b)}, IdentityHeader: "X-API-Key", MaxConns: clients, Timeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer tgt.Close()
		measure(b, func(w, i int) error {
			k := (w + i*clients) % len(ids)
			r := tgt.Do(context.Background(), traffic.Request{Identity: uint32(k), ID: ids[k]})
			if r.Err != nil {
				return r.Err
			}
			if r.Outcome != decision.Allowed {
				return fmt.Errorf("outcome %v, status %d", r.Outcome, r.Status)
			}
			return nil
		})
	})
	b.Run("fasthttp", func(b *testing.B) {
		u := httpURL(b)
		hc := &fasthttp.HostClient{Addr: strings.SplitN(u, "/", 4)[2], MaxConns: clients}
		measure(b, func(w, i int) error {
			k := (w + i*clients) % len(ids)
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.SetRequestURI(u)
			req.Header.Set("X-API-Key", ids[k])
			if err := hc.DoTimeout(req, res, 5*time.Second); err != nil {
				return err
			}
			_ = res.Header.Peek("Retry-After")
			_ = res.Header.Peek("RateLimit")
			if s := res.StatusCode(); s != http.StatusOK {
				return fmt.Errorf("status %d", s)
			}
			return nil
		})
	})
	b.Run("net-http", func(b *testing.B) {
		u := httpURL(b)
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
		defer c.CloseIdleConnections()
		measure(b, func(w, i int) error {
			k := (w + i*clients) % len(ids)
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			req.Header.Set("X-API-Key", ids[k])
			res, err := c.Do(req)
			if err != nil {
				return err
			}
			_ = httptarget.ParseHints(res.Header, time.Now())
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
			return err
		})
	})
}
