package report

import (
	"io"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/analysis"
)

// BenchmarkHTML renders a report whose scenario carries long series (a
// 60 s run at 1 ms resolution, 50 gateways), the size a real run hands in.
func BenchmarkHTML(b *testing.B) {
	r := fixture()
	res := r.Scenarios[0].Result
	res.Timeline, res.Sliding = nil, nil
	for i := range 60000 {
		at := time.Duration(i) * time.Millisecond
		res.Timeline = append(res.Timeline, analysis.Point{At: at, Value: float64(i % 7)})
		res.Sliding = append(res.Sliding, analysis.Point{At: at, Value: float64(i % 23)})
	}
	res.Interval = time.Millisecond
	res.PerGateway = make([]analysis.GatewayResult, 50)
	b.ReportAllocs()
	for b.Loop() {
		if err := HTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSON(b *testing.B) {
	r := fixture()
	b.ReportAllocs()
	for b.Loop() {
		if err := JSON(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
