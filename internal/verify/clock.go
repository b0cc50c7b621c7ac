package verify

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/history"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/scenario"
	"github.com/rlctl/rlctl/internal/target/httptarget"
)

// clockRef is a clock every machine of a shared run can read: the target's
// Redis (TIME), else an HTTP gateway's (its decision time, else its Date).
// Merge puts each machine's history on this clock's time line.
type clockRef struct {
	name string
	// read returns the reference's time, and its resolution: a reading r
	// means a time in [r, r+resolution).
	read func(ctx context.Context) (t time.Time, resolution time.Duration, err error)
}

// redisClock reads Redis TIME (to the microsecond). Reading it writes
// nothing.
func redisClock(cfg *redisconn.Config) *clockRef {
	return &clockRef{name: "redis TIME", read: func(ctx context.Context) (time.Time, time.Duration, error) {
		c := cfg.NewClient()
		defer c.Close()
		t, err := c.Time(ctx).Result()
		return t, time.Microsecond, err
	}}
}

// httpClock sends one request as identity httptarget.ProbeID (as the probe
// before the run does) to the target's first URL, and reads the gateway's
// decision time (X-RateLimit-Decided-At, to the microsecond), else its
// Date header (to the second).
func httpClock(t scenario.Target, tlsConf *tls.Config) *clockRef {
	c := &http.Client{Timeout: max(t.RequestTimeout, time.Second), Transport: &http.Transport{TLSClientConfig: tlsConf}}
	ref := &clockRef{name: "http Decided-At"}
	ref.read = func(ctx context.Context) (time.Time, time.Duration, error) {
		fill := func(s string) string { return strings.ReplaceAll(s, "{id}", httptarget.ProbeID) }
		u, err := url.Parse(fill(t.URLs[0]))
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		if t.Identity.Query != "" {
			q := u.Query()
			q.Set(t.Identity.Query, httptarget.ProbeID)
			u.RawQuery = q.Encode()
		}
		method := t.Method
		if method == "" {
			method = http.MethodGet
		}
		var body io.Reader
		if t.Body != "" {
			body = strings.NewReader(fill(t.Body))
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		for k, v := range t.Headers {
			req.Header.Set(k, fill(v))
		}
		if t.Identity.Header != "" {
			req.Header.Set(t.Identity.Header, httptarget.ProbeID)
		}
		resp, err := c.Do(req)
		if err != nil {
			return time.Time{}, 0, t.RedactError(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if at, ok := decision.ParseDecidedAt(resp.Header.Get(decision.DecidedAtHeader)); ok {
			return at, time.Microsecond, nil
		}
		at, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return time.Time{}, 0, fmt.Errorf("%s answered with neither %s nor a Date", t.ShownURL(t.URLs[0]), decision.DecidedAtHeader)
		}
		ref.name = "http Date"
		return at, time.Second, nil
	}
	return ref
}

// clockReading is one reading of a reference: this machine's clock minus
// the reference's, within ±uncertainty.
type clockReading struct {
	offset, uncertainty time.Duration
}

// readClock reads ref once. The reference was read somewhere between the
// two local readings around the request, so the offset is taken at their
// middle and is uncertain by half the round trip, plus half the
// reference's resolution.
func readClock(ctx context.Context, ref *clockRef, now func() time.Time) (clockReading, error) {
	t0 := now()
	at, res, err := ref.read(ctx)
	t1 := now()
	if err != nil {
		return clockReading{}, fmt.Errorf("read the reference clock (%s): %w", ref.name, err)
	}
	half := t1.Sub(t0) / 2
	return clockReading{
		offset:      t0.Add(half).Sub(at.Add(res / 2)),
		uncertainty: half + res/2,
	}, nil
}

// combineClock is what the readings at a run's start and end say of its
// whole span: their mean offset, uncertain by the larger reading's
// uncertainty plus half of how far the offset moved between them (the
// clocks' drift over the run).
func combineClock(name string, a, b clockReading) history.Clock {
	mean := a.offset + (b.offset-a.offset)/2
	drift := b.offset - a.offset
	if drift < 0 {
		drift = -drift
	}
	return history.Clock{Offset: mean, Uncertainty: max(a.uncertainty, b.uncertainty) + drift/2, Reference: name}
}

// clockNote says where a segment's clock stood against the reference.
func clockNote(c history.Clock) string {
	if c.Reference == "" {
		return ""
	}
	return fmt.Sprintf("this machine's clock was %v from the shared reference (%s, read at the start and the end), ±%v: report merge moves this history by that much and widens each request's send-receive interval by the uncertainty, so merged ceilings stay bounds",
		c.Offset.Round(time.Microsecond), c.Reference, c.Uncertainty.Round(time.Microsecond))
}

// sharedNotes say what a run that is one of several was: its segment, how
// late it started, and where its clock stood.
func sharedNotes(h *history.History, o Options, clockErr error) []string {
	var out []string
	if m := h.Meta; m.Segment != "" {
		out = append(out, fmt.Sprintf("this run sent segment %s of the plan: report merge joins it with the other segments' runs", m.Segment))
	}
	if !o.StartAt.IsZero() {
		out = append(out, lateNote(o.StartAt, h.Meta.Late))
	}
	if clockErr != nil {
		out = append(out, fmt.Sprintf("this machine's clock could not be compared with a shared reference (%v): report merge trusts it as it is", clockErr))
	} else if n := clockNote(h.Meta.Clock); n != "" {
		out = append(out, n)
	}
	return out
}

// lateNote says when a run started against the common start it was given.
func lateNote(at time.Time, late time.Duration) string {
	return fmt.Sprintf("the traffic started %v after the common start %s (on this machine's clock)", late.Round(time.Microsecond), at.UTC().Format(time.RFC3339Nano))
}
