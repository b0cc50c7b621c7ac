package clientbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/netcheck"
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
// body drained. "target" is the http target itself, on fasthttp; bare
// fasthttp does the same work (see its sub-benchmark), so the two rows
// show what the target adds to the library; net/http parses hints too
// (ParseHints reads an http.Header).
func BenchmarkHTTPClient(b *testing.B) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%d", i)
	}
	b.Run("target", func(b *testing.B) {
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
	// fasthttp configured and used as the http target uses it: no
	// retries (no request sent twice), the path as given, rlctl's own
	// User-Agent, every connection checked for a close by the gateway
	// before it carries the next request, the limiter's headers read
	// into the same hints, and the answer turned into a decision.
	b.Run("fasthttp", func(b *testing.B) {
		u := httpURL(b)
		host := strings.SplitN(u, "/", 4)[2]
		d := &net.Dialer{Timeout: 5 * time.Second}
		hc := &fasthttp.HostClient{
			Addr: host, MaxConns: clients, Name: "rlctl", DisablePathNormalizing: true,
			MaxIdemponentCallAttempts: 1,
			DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return nil, err
				}
				return &probedConn{Conn: c, probe: netcheck.NewProbe(c)}, nil
			},
		}
		path := "/" + strings.SplitN(u, "/", 4)[3]
		measure(b, func(w, i int) error {
			k := (w + i*clients) % len(ids)
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.Header.SetNoDefaultContentType(true)
			req.Header.DisableNormalizing()
			req.SetRequestURI(path)
			req.Header.SetHost(host)
			req.Header.Set("X-Api-Key", ids[k])
			if err := hc.DoDeadline(req, res, time.Now().Add(5*time.Second)); err != nil {
				return err
			}
			var h http.Header
			for key, v := range res.Header.All() {
				if hintKey(key) {
					if h == nil {
						h = make(http.Header, 4)
					}
					ck := textproto.CanonicalMIMEHeaderKey(string(key))
					h[ck] = append(h[ck], string(v))
				}
			}
			if h != nil {
				_ = httptarget.ParseHints(h, time.Now())
			}
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

// probedConn checks, before a request starts on a reused connection,
// whether the server closed it while idle: the target's check.
type probedConn struct {
	net.Conn
	probe   *netcheck.Probe
	writes  int
	readYet bool
}

var errClosedWhileIdle = errors.New("closed while idle")

func (c *probedConn) Write(b []byte) (int, error) {
	if c.writes == 0 || c.readYet {
		c.writes++
		c.readYet = false
		if c.writes > 1 && !c.probe.Alive() {
			return 0, errClosedWhileIdle
		}
	}
	return c.Conn.Write(b)
}

func (c *probedConn) Read(b []byte) (int, error) {
	c.readYet = true
	return c.Conn.Read(b)
}

// hintKey is the target's choice of headers: Retry-After and the
// rate-limit fields.
func hintKey(k []byte) bool {
	fold := func(p string) bool { return len(k) >= len(p) && bytes.EqualFold(k[:len(p)], []byte(p)) }
	return (len(k) == len("retry-after") && fold("retry-after")) || fold("ratelimit") || fold("x-ratelimit") || fold("x-rate-limit")
}
