package analysis

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// EncodeHistogram writes exactly the bytes of hdrhistogram's own Encode, so
// reports stay readable by every HdrHistogram decoder and byte-identical to
// those written before.
func TestEncodeHistogramIsTheLibrarysEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for i := range 300 {
		h := NewLatencyHistogram()
		switch i {
		case 0: // empty
		case 1:
			recordMicros(h, 0)
		case 2:
			recordMicros(h, histHighest)
		default:
			for range rng.IntN(2000) {
				v := min(int64(math.Exp(rng.Float64()*22)), histHighest)
				if err := h.RecordValues(v, 1+rng.Int64N(1<<uint(rng.IntN(40)))); err != nil {
					t.Fatal(err)
				}
			}
		}
		want, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("histogram %d (%d values, max %d): encoding differs from hdrhistogram's:\n got %s\nwant %s", i, h.TotalCount(), h.Max(), got, want)
		}
		back, err := hdrhistogram.Decode(got)
		if err != nil || !back.Equals(h) {
			t.Fatalf("histogram %d does not decode back to itself: %v", i, err)
		}
	}
}

func TestAppendZigZagMatchesTheFormat(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0}},
		{-1, []byte{1}},
		{1, []byte{2}},
		{63, []byte{0x7e}},
		{64, []byte{0x80, 1}},
		{-65, []byte{0x81, 1}},
		{math.MaxInt64, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		if got := appendZigZag(nil, c.v); !bytes.Equal(got, c.want) {
			t.Errorf("appendZigZag(%d) = %x, want %x", c.v, got, c.want)
		}
	}
}
