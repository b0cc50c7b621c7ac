package discover

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

// queueAnswers is a batch of n sent to a queue of depth at rate per
// second, the sends spread evenly over spread: a leaky bucket whose level
// drains while the sends go out, each admitted one answered when the queue
// reaches it, each refused one answered at once. held holds up the first
// admitted answer that long (a busy machine).
func queueAnswers(n, depth int, rate float64, spread, held time.Duration) []obs {
	t0 := time.Unix(1_700_000_000, 0)
	period := time.Duration(float64(time.Second) / rate)
	var got []obs
	level, admitted := 0.0, 0
	last := t0
	for i := range n {
		sent := t0
		if n > 1 {
			sent = t0.Add(spread * time.Duration(i) / time.Duration(n-1))
		}
		level = max(0, level-sent.Sub(last).Seconds()*rate)
		last = sent
		if level+1 > float64(depth)+1e-9 {
			got = append(got, obs{sent: sent, recv: sent.Add(time.Millisecond), out: decision.Denied, status: 429})
			continue
		}
		level++
		recv := t0.Add(time.Duration(admitted) * period).Add(time.Millisecond)
		if admitted == 0 {
			recv = recv.Add(held)
		}
		admitted++
		got = append(got, obs{sent: sent, recv: recv, out: decision.Allowed, status: 200})
	}
	return got
}

// A batch "sent at once" that took its sends a while to go out lets the
// queue drain meanwhile, and more are admitted than it holds: the depth
// read is the admitted less what drained, and an admitted answer held up
// does not shift the rate read from the others.
func TestReadQueueBatchAllowsForTheSendsSpread(t *testing.T) {
	for _, tt := range []struct {
		name          string
		spread, held  time.Duration
		admitted      int
		leaked, depth float64
	}{
		{"at once", 0, 0, 6, 0, 6},
		{"spread over 250ms", 250 * time.Millisecond, 0, 8, 2, 6},
		{"spread over 150ms, first answer held up 60ms", 150 * time.Millisecond, 60 * time.Millisecond, 7, 1, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := queueAnswers(40, 6, 10, tt.spread, tt.held)
			q := readQueueBatch(got, 9)
			if q.admitted != tt.admitted || q.denied != 40-tt.admitted || q.status != 429 {
				t.Fatalf("read %d admitted and %d denied (status %d), want %d and %d (429): the simulated queue is off",
					q.admitted, q.denied, q.status, tt.admitted, 40-tt.admitted)
			}
			if q.leaked != tt.leaked || q.depth != tt.depth {
				t.Errorf("leaked %v, depth %v; want %v and %v", q.leaked, q.depth, tt.leaked, tt.depth)
			}
			if !within(q.rate, 10) {
				t.Errorf("rate %.4g/s, want 10/s", q.rate)
			}
		})
	}
}

// A send held up on the way arrives later than it was stamped: the sends'
// spread reads 30ms, less than a period, yet one admission was sent after
// a denial had come back, when the queue was full, so it got in by a
// slot let go meanwhile and is not counted in the depth.
func TestReadQueueBatchCountsAnAdmissionAfterADenial(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	got := []obs{{sent: ms(0), recv: ms(1), out: decision.Allowed, status: 200}}
	for i := 1; i <= 5; i++ { // queued, one answered every 50ms
		got = append(got, obs{sent: ms(i), recv: ms(50 * i), out: decision.Allowed, status: 200})
	}
	for i := 6; i < 30; i++ { // refused at once
		got = append(got, obs{sent: ms(i), recv: ms(i + 1), out: decision.Denied, status: 429})
	}
	got = append(got, obs{sent: ms(30), recv: ms(300), out: decision.Allowed, status: 200})
	q := readQueueBatch(got, 20)
	if q.admitted != 7 || q.spread != 30*time.Millisecond {
		t.Fatalf("%+v: want 7 admitted over a 30ms spread", q)
	}
	if q.leaked != 1 || q.depth != 6 {
		t.Errorf("leaked %v, depth %v; want 1 and 6", q.leaked, q.depth)
	}
}

// A queue that never refused within the batch holds at least what it
// admitted: nothing is taken off for the sends' spread.
func TestReadQueueBatchWithoutDenialIsALowerBound(t *testing.T) {
	q := readQueueBatch(queueAnswers(5, 6, 10, 300*time.Millisecond, 0), 10)
	if q.denied != 0 || q.depth != 5 || q.leaked != 0 {
		t.Errorf("%+v: want 5 admitted, depth 5, nothing taken off", q)
	}
}

// flight is an admitted request sent at from ms and answered at to ms.
func flight(from, to int) obs {
	t0 := time.Unix(1_700_000_000, 0)
	return obs{sent: t0.Add(time.Duration(from) * time.Millisecond), recv: t0.Add(time.Duration(to) * time.Millisecond), out: decision.Allowed}
}

// A burst to a concurrency limit of 3 (each request held 40ms) that went
// out in two waves, the second after the first was answered, admitted 6,
// but the limiter never held more than 3 at one instant; nor when the
// second wave was held up on the way, after its sends were stamped (known
// from how long a request sent alone takes). A refused request does not
// count, and an answer at the instant of the next send does not overlap it.
func TestInFlightCountsOverlapNotAdmissions(t *testing.T) {
	denied := obs{sent: flight(0, 1).sent, recv: flight(0, 1).recv, out: decision.Denied}
	for _, tt := range []struct {
		name string
		os   []obs
		hold time.Duration
		want int
	}{
		{"one wave", []obs{flight(0, 40), flight(1, 41), flight(2, 42), denied}, 0, 3},
		{"two waves", []obs{flight(0, 40), flight(1, 41), flight(2, 42), denied, flight(100, 140), flight(101, 141), flight(102, 142)}, 0, 3},
		{"one late", []obs{flight(0, 40), flight(1, 41), flight(2, 42), flight(42, 82)}, 0, 3},
		{"second wave held up after its stamp", []obs{flight(0, 40), flight(1, 41), flight(2, 42), denied, flight(3, 141), flight(4, 142), flight(5, 143)}, 41 * time.Millisecond, 3},
		{"the same, hold unknown", []obs{flight(0, 40), flight(1, 41), flight(2, 42), flight(3, 141), flight(4, 142), flight(5, 143)}, 0, 6},
		{"none admitted", []obs{denied}, 0, 0},
	} {
		if got := inFlight(tt.os, tt.hold); got != tt.want {
			t.Errorf("%s: %d in flight, want %d", tt.name, got, tt.want)
		}
	}
}
