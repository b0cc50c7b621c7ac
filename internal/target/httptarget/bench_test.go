package httptarget

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
	"github.com/rlctl/rlctl/internal/traffic/traffictest"
	"github.com/rlctl/rlctl/internal/workload"
)

// BenchmarkHTTPTarget is requests per second through the HTTP target to a
// loopback server that answers at once (closed model, 50 connections).
func BenchmarkHTTPTarget(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Remaining", "5")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	tgt, err := New(Options{URLs: []string{srv.URL}, IdentityHeader: "X-API-Key", MaxConns: 50})
	if err != nil {
		b.Fatal(err)
	}
	defer tgt.Close()
	plan := traffic.Plan{Model: workload.ModelClosed, Concurrency: 50, Duration: time.Hour, MaxRequests: int64(b.N), Identities: 16}
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	h, err := traffic.Run(context.Background(), tgt, plan, traffic.RunOptions{})
	took := time.Since(began)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if c := traffictest.Counts(h); c[decision.Allowed] != b.N {
		b.Fatalf("outcomes %v", c)
	}
	b.ReportMetric(float64(b.N)/took.Seconds(), "req/s")
}
