package discover

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// run is the whole sequence: classify, then, for several URLs, whether
// they share the limit.
func (e *engine) run(ctx context.Context) error {
	if err := e.classify(ctx); err != nil {
		return err
	}
	if e.res.Found && e.p.gateways > 1 {
		return e.shared(ctx)
	}
	return nil
}

// classify is the single-URL sequence: a burst finds the quota, polls
// find its refill, and the branch of the refill's shape (a step back to
// the full quota, or a trickle) places probes that tell the classes
// apart.
func (e *engine) classify(ctx context.Context) error {
	a, err := e.p.newID()
	if err != nil {
		return err
	}
	s, err := e.p.newID()
	if err != nil {
		return err
	}
	// The first burst may take most of the budget: what is left is for
	// the polls that follow.
	bA, err := e.sendBurst(ctx, a, 0, max(e.o.Budget-80, e.o.Budget/2), -1, true)
	if err != nil {
		return err
	}
	if bA.queued {
		// A loaded machine's stall also gives late answers in a row, but
		// a queue's stay late as the burst goes on: go on, judged against
		// the quickest answer so far.
		more, err := e.sendBurst(ctx, a, 0, max(e.o.Budget-80, e.o.Budget/2)-len(bA.obs), bA.base, true)
		if err != nil {
			return err
		}
		// Too few answers after it to tell (the budget's end) keep the
		// queue.
		queued := more.queued || (more.denial == nil && more.admitted < 4)
		bA = bA.joined(more)
		if queued {
			return e.queue(ctx, a, bA)
		}
		e.note("four answers in a row came late in the first burst, then quick ones again: taken for a stall, not a queue")
	}
	if bA.denial == nil {
		return e.noDenial(ctx, bA)
	}
	e.res.Found = true
	e.res.Policy.DeniedStatus = bA.denial.status
	// A second identity spends its quota alongside and then stays silent
	// but for sparse probes: if it gets its quota back while the first,
	// polled densely, does not, the denials themselves held the first out.
	bS, err := e.burst(ctx, s, 0, min(bA.admitted+10, e.p.left(s)))
	if err != nil {
		return err
	}
	ph, err := e.phaseOne(ctx, a, s, bA, bS)
	if err != nil {
		return err
	}
	e.retryAfter(ph.denialsCount)
	e.remainingHint(bA)
	if ph.denialsCount {
		return e.lockout(ctx, s, bA, bS, ph)
	}
	if ph.aAdmit == nil {
		e.res.Policy.Algorithm = Undetermined
		e.res.Policy.Limit = int64(bA.admitted)
		e.fig("algorithm", 0.2, "%d admitted back to back, then denied; no admission came back within %v of polling", bA.admitted, time.Since(bA.denial.recv).Round(time.Millisecond))
		e.fig("limit", 0.5, "%d admitted back to back before the first denial", bA.admitted)
		e.note("the quota did not come back within the run's budget and duration: raise --max-duration (measuring a window takes some six of it) or --budget")
		return nil
	}
	// Wait a little after the first re-admission so that a log's entries
	// of the whole first burst have expired, then take what came back.
	t1 := ph.aAdmit.mid().Sub(bA.first().mid())
	if err := sleepUntil(ctx, ph.aAdmit.recv.Add(max(t1/10, 2*time.Millisecond))); err != nil {
		return err
	}
	rb, err := e.burst(ctx, a, 0, min(bA.admitted+10, e.p.left(a)))
	if err != nil && !errors.Is(err, errBudget) {
		return err
	}
	back := 1 + rb.admitted
	half := max(2, 0.5*float64(bA.admitted))
	if float64(back) < half && rb.denial != nil {
		// A lone admission may be a leftover (a leasing gateway's slice)
		// rather than a refill: a bucket gives the next one within a few
		// refill periods, a window only at its reset, with the quota.
		tok := ph.aAdmit.mid().Sub(bA.denial.mid())
		pr, err := e.poll(ctx, a, 0, rb.denial.recv, max(tok/2, time.Millisecond), 1.1, 2*time.Millisecond, min(100, e.p.left(a)-80), nil)
		if err != nil && !errors.Is(err, errBudget) {
			return err
		}
		if pr.admit != nil && pr.admit.sent.Sub(rb.denial.recv) > 4*tok+10*time.Millisecond {
			more, _, err := e.drain(ctx, a, 0, min(bA.admitted+10, e.p.left(a)))
			if err != nil && !errors.Is(err, errBudget) {
				return err
			}
			if float64(1+more) >= half {
				e.note("an admission %v after the first denial came without the quota behind it (%d); the quota came back %v later: taken for a leftover, not a refill",
					tok.Round(time.Millisecond), back, pr.admit.sent.Sub(ph.aAdmit.sent).Round(time.Millisecond))
				ph.aAdmit, back = pr.admit, 1+more
				rb = burstResult{}
			}
		}
	}
	var reDrain *obs
	for i := range rb.obs {
		if rb.obs[i].admitted() {
			reDrain = &rb.obs[i]
			break
		}
	}
	if float64(back) >= half {
		quota, err := e.quota(ctx, bA, back, rb)
		if err != nil {
			return err
		}
		return e.windows(ctx, a, bA, ph, back, quota, reDrain)
	}
	return e.bucket(ctx, a, bA, ph, back)
}

// quota is the most a window admits. A gateway may deny a little early
// while it fetches more of a shared budget (leasing), so it is the most
// seen at once, unless the first burst got well more than came back: a
// burst begun just before a shared boundary gets the end of one window
// and the whole of the next. A fresh identity's burst now, just after a
// reset, then tells the two apart: it gets one window's quota if the
// first burst straddled a boundary, and the first burst's count
// otherwise.
func (e *engine) quota(ctx context.Context, bA burstResult, back int, rb burstResult) (int, error) {
	L := max(bA.admitted, back)
	if rb.denial == nil || float64(bA.admitted) <= 1.1*float64(back) {
		return L, nil
	}
	c, err := e.p.newID()
	if err != nil {
		return L, nil
	}
	bC, err := e.burst(ctx, c, 0, min(bA.admitted+10, e.p.left(c)))
	if err != nil && !errors.Is(err, errBudget) {
		return 0, err
	}
	if bC.denial == nil || float64(bC.admitted) > 1.1*float64(back) {
		return max(L, bC.admitted), nil
	}
	e.note("the first burst got %d in %v, but a fresh identity's burst just after a reset got %d and %d came back: taken for a burst across a window's boundary",
		bA.admitted, bA.denial.recv.Sub(bA.first().sent).Round(time.Millisecond), bC.admitted, back)
	return max(back, bC.admitted), nil
}

// phaseOneResult is what the first polls found.
type phaseOneResult struct {
	aPoll, sPoll pollResult
	aAdmit       *obs // first re-admission of the densely polled identity
	sAdmit       *obs // of the sparsely probed one, the quota behind it
	sBack        int  // how much of the quota came back with sAdmit
	denialsCount bool
}

// phaseOne polls identity a densely (every 10% of the time since its
// first denial) and probes identity s sparsely (doubling gaps) until a is
// admitted again, or until s is and a, polled after that, is still
// denied: then a's denials are what keeps it out.
func (e *engine) phaseOne(ctx context.Context, a, s int, bA, bS burstResult) (phaseOneResult, error) {
	var mu sync.Mutex
	var res phaseOneResult
	sctx, stopS := context.WithCancel(ctx)
	defer stopS()
	var wg sync.WaitGroup
	var sErr error
	if bS.denial != nil {
		wg.Go(func() {
			// A lone admission without the quota behind it is no return.
			pr, err := e.pollReset(sctx, s, bS.denial.recv, 25*time.Millisecond, 2, time.Millisecond, min(24, e.p.left(s)-bA.admitted-20), bA.admitted)
			mu.Lock()
			defer mu.Unlock()
			res.sPoll, res.sAdmit, res.sBack = pr, pr.admit, pr.back
			if err != nil && sctx.Err() == nil {
				sErr = err
			}
		})
	}
	stop := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return res.sAdmit != nil && res.denialsCount
	}
	// watch a's denials: one sent well after s came back means a's own
	// denials held it out.
	pr, err := e.pollWatch(ctx, a, 0, bA.denial.recv, 3*time.Millisecond, 1.1, 2*time.Millisecond, min(130, e.p.left(a)-40), stop, func(o obs) {
		mu.Lock()
		defer mu.Unlock()
		if o.denied() && res.sAdmit != nil && o.sent.After(res.sAdmit.recv.Add(5*time.Millisecond)) {
			res.denialsCount = true
		}
	})
	stopS()
	wg.Wait()
	if err != nil {
		return res, err
	}
	if sErr != nil {
		return res, sErr
	}
	res.aPoll, res.aAdmit = pr, pr.admit
	if res.aAdmit == nil && res.sAdmit != nil {
		// s came back and a never did while polled: its denials count.
		res.denialsCount = true
	}
	if res.denialsCount {
		res.aAdmit = nil
	}
	return res, nil
}

// windows handles a quota that comes back whole: a fixed window or a
// sliding log. Three more resets of the same identity measure the window
// (the first from a poll growing 10% a step, the next two from steps of
// 1/150 of it, whose interval is the figure); probes placed at chosen offsets from the last reset
// tell shared (epoch) boundaries from first-request ones, and a window
// from a log.
func (e *engine) windows(ctx context.Context, a int, bA burstResult, ph phaseOneResult, back, L int, reDrain *obs) error {
	p := &e.res.Policy
	p.Limit = int64(L)
	f := false
	p.DenialsCount = &f
	e.fig("denials_count", 0.8, "a second identity probed sparsely got its quota back no sooner than the one polled densely (%d denials while waiting)", len(ph.aPoll.denials))
	switch {
	case L < bA.admitted:
		e.fig("limit", 0.8, "at most %d admitted back to back just after a reset (%d once the quota came back); the very first burst's %d crossed a boundary", L, back, bA.admitted)
	default:
		conf := 0.9
		if math.Abs(float64(back-bA.admitted)) > 0.1*float64(L) {
			conf = 0.6
		}
		e.fig("limit", conf, "%d admitted back to back by a fresh identity before the first denial (status %d); %d again once the quota came back", bA.admitted, bA.denial.status, back)
	}
	t1 := ph.aAdmit.mid().Sub(bA.first().mid())
	// The polls count from the quota's return: the re-admission, or the
	// requests drained after it, whose entries a log holds longest.
	re := ph.aAdmit
	if reDrain != nil {
		re = reDrain
	}
	pr, err := e.pollReset(ctx, a, re.sent, max(t1/2, 5*time.Millisecond), 1.1, 2*time.Millisecond, min(80, e.p.left(a)-L-40), L)
	if err != nil && !errors.Is(err, errBudget) {
		return err
	}
	if pr.admit == nil {
		p.Algorithm = FixedWindow
		e.fig("algorithm", 0.3, "the whole quota (%d) came back %v after the first request; the next reset was not seen", back, t1.Round(time.Millisecond))
		e.note("the second reset was not seen within the budget or duration, so the window is not measured")
		return nil
	}
	b2, lo2, hi2 := resetAt(pr)
	w2 := b2.Sub(re.mid())
	// The third reset, polled finely now that the window's size is known:
	// the interval between two resets found this way is the window
	// whether boundaries are shared or start at a first request.
	w, lo, hi := w2, lo2.Sub(re.sent), hi2.Sub(re.sent)
	anchor := b2
	// Then a fourth, as finely: the interval between two resets both
	// found within 1/150 of the window. Each is polled where the last
	// interval puts it; one that comes later (the admission before it was
	// not the request that opened its window: one whose answer was lost
	// may have) is looked for further on, more coarsely, and a fifth then
	// polled finely where that puts it.
	strays := pr.strays
	prev, prevLo, prevHi := b2, lo2, hi2
	from := pr.admit.sent
	coarse := false
	for i := 0; i < 2 || (coarse && i < 3); i++ {
		if w*22/10 >= e.remaining() {
			break
		}
		step := max(w/150, time.Millisecond)
		prN, err := e.pollReset(ctx, a, from, w*75/100, 1, step, min(80, e.p.left(a)-L-12), L)
		if err != nil && !errors.Is(err, errBudget) {
			return err
		}
		strays += prN.strays
		coarse = false
		// Only denials in the dense polls: the reset is further on. (An
		// admission without the quota behind it is a log's entry ageing
		// out, its quota coming back piece by piece: no later reset.)
		if ld := prN.lastDenied(); prN.admit == nil && err == nil && ld != nil && prN.strays == 0 {
			further, err := e.pollReset(ctx, a, from, ld.sent.Sub(from)+step, 1.1, step, min(40, e.p.left(a)-L-12), L)
			if err != nil && !errors.Is(err, errBudget) {
				return err
			}
			strays += further.strays
			further.denials = append(prN.denials, further.denials...)
			prN, coarse = further, true
		}
		if prN.admit == nil || prN.lastDenied() == nil {
			break
		}
		bN, loN, hiN := resetAt(prN)
		w, lo, hi = bN.Sub(prev), loN.Sub(prevHi), hiN.Sub(prevLo)
		anchor = bN
		prev, prevLo, prevHi, from = bN, loN, hiN, prN.admit.sent
	}
	if strays > 0 {
		e.note("%d admissions came between resets without the quota behind them (a gateway's leftover slice, or a log's single entry ageing out): a reset is taken only where at least half the quota came back", strays)
	}
	measured := roundWindow(w)
	w = roundBetween(measured, lo, hi)
	p.WindowMS = w.Milliseconds()
	e.fig("window_ms", 1-float64(hi-lo)/float64(w), "the quota came back %v after the first request; the next two resets came %v apart (between %v and %v)%s",
		t1.Round(time.Millisecond), measured, lo.Round(time.Millisecond), hi.Round(time.Millisecond), roundWords(measured, w))
	if w*23/10 > e.remaining() {
		p.Algorithm = FixedWindow
		e.fig("algorithm", 0.4, "the whole quota came back at once after %v (a window, or a log of a burst); no time was left to tell them apart", t1.Round(time.Millisecond))
		e.note("a window of %v leaves too little of --max-duration to probe its alignment and tell a fixed window from a sliding log", w)
		return nil
	}
	var g, fl alignProbe
	var wg sync.WaitGroup
	wg.Go(func() { g = e.alignment(ctx, anchor, w, L) })
	wg.Go(func() { fl = e.halves(ctx, anchor, w, L) })
	wg.Wait()
	if fl.again != nil {
		e.note("the probe telling a window from a log ran twice: %v", fl.again)
	}
	for _, r := range []alignProbe{g, fl} {
		if r.err != nil && !errors.Is(r.err, errBudget) && !errors.Is(r.err, errNoDenial) && !errors.Is(r.err, errUnplaced) {
			return r.err
		}
	}
	switch {
	case fl.err == nil && L >= 4 && float64(fl.n) <= 0.65*float64(L):
		p.Algorithm = SlidingLog
		p.Aligned = AlignNone
		e.fig("algorithm", 0.6+0.3*(1-float64(fl.n)/float64(L)), "after %d requests at the start of a window and %d at its middle, only %d came back one window after the start: each request ages out on its own", fl.first, fl.second, fl.n)
		e.fig("aligned", 0.8, "a log has no windows: each admission counts for %v from its own time", w)
		return nil
	case fl.err == nil && L < 4:
		p.Algorithm = FixedWindow
		e.fig("algorithm", 0.4, "the whole quota of %d came back at once; a quota under 4 is too small to tell a fixed window from a sliding log", L)
	case fl.err == nil:
		p.Algorithm = FixedWindow
		e.fig("algorithm", 0.6+0.3*float64(fl.n)/float64(L), "after %d requests at the start of a window and %d at its middle, %d came back one window after the start: the whole quota at once", fl.first, fl.second, fl.n)
	default:
		p.Algorithm = FixedWindow
		e.fig("algorithm", 0.4, "the whole quota came back at once (%d); the probe telling a window from a log did not finish: %v", back, fl.err)
	}
	switch {
	case g.err != nil:
		e.fig("aligned", 0, "the alignment probe did not finish: %v", g.err)
	case g.epoch:
		p.Aligned = AlignEpoch
		e.fig("aligned", 0.9, "a fresh identity that spent its quota half a window after another identity's reset got it back %v later, at that identity's next reset: the windows are the same for everyone (at %.0f%% of Unix-epoch windows of %v)",
			g.back.Round(time.Millisecond), 100*epochPhase(anchor, w), w)
	case g.back > 0:
		p.Aligned = AlignFirstRequest
		e.fig("aligned", 0.85, "a fresh identity that spent its quota half a window after another identity's reset was still denied at that identity's next reset and got it back %v after its own first request", g.back.Round(time.Millisecond))
	default:
		e.fig("aligned", 0.2, "the alignment probe saw no reset")
	}
	return nil
}

// pollReset polls like poll for the quota's return, taking an admission
// for a reset only when, drained at once, at least half the quota L came
// back with it; a lone admission (a leftover slice of a leasing gateway,
// say) is counted as a stray and the polls go on. The quota is spent
// again when it returns.
func (e *engine) pollReset(ctx context.Context, id int, from time.Time, e0 time.Duration, ratio float64, minStep time.Duration, n, L int) (pollResult, error) {
	var out pollResult
	for n > 0 {
		pr, err := e.poll(ctx, id, 0, from, e0, ratio, minStep, n, nil)
		out.denials = append(out.denials, pr.denials...)
		n -= len(pr.denials) + 1
		if err != nil || pr.admit == nil {
			return out, err
		}
		more, denial, err := e.drain(ctx, id, 0, min(L+10, e.p.left(id)))
		if err != nil && !errors.Is(err, errBudget) {
			return out, err
		}
		if 1+more >= max(2, (L+1)/2) || L < 3 {
			out.admit, out.back = pr.admit, 1+more
			return out, nil
		}
		out.strays++
		if denial != nil {
			// Denied right after the stray: the reset is later still.
			out.denials = append(out.denials, *denial)
		}
		// Go on from where the polls were.
		e0 = pr.admit.sent.Sub(from)
		e0 = max(time.Duration(float64(e0)*ratio), e0+minStep)
	}
	return out, nil
}

// resetAt is where a poll's admission most likely fell (between its last
// denial and the admission), and the bracket's ends.
func resetAt(pr pollResult) (at, lo, hi time.Time) {
	ad := pr.admit
	ld := pr.lastDenied()
	if ld == nil {
		return ad.mid(), ad.sent, ad.recv
	}
	lo, hi = ld.mid(), ad.mid()
	return lo.Add(hi.Sub(lo) / 2), ld.sent, ad.recv
}

// errNoDenial is a burst of a fresh identity that met no denial where the
// quota says it would.
var errNoDenial = errors.New("no denial")

// alignProbe is the outcome of a probe placed at an offset of the window.
type alignProbe struct {
	epoch         bool
	back          time.Duration
	first, second int
	n             int
	err           error
	// again is why a first try was run again (nil when it was not).
	again error
}

// at is the first instant anchor + frac·w + k·w (k ≥ 0) still ahead.
func at(anchor time.Time, w time.Duration, frac float64) time.Time {
	t := anchor.Add(time.Duration(frac * float64(w)))
	for !t.After(time.Now()) {
		t = t.Add(w)
	}
	return t
}

// alignment spends a fresh identity's quota half a window after a known
// reset of another identity and probes past the next one: boundaries
// shared by every identity have reset there, windows that start at each
// identity's first request have not.
func (e *engine) alignment(ctx context.Context, anchor time.Time, w time.Duration, L int) alignProbe {
	var r alignProbe
	id, err := e.p.newID()
	if err != nil {
		r.err = err
		return r
	}
	if r.err = sleepUntil(ctx, at(anchor, w, 0.45)); r.err != nil {
		return r
	}
	b, err := e.burst(ctx, id, 0, min(L+10, e.p.left(id)))
	if err != nil || b.denial == nil {
		r.err = errors.Join(err, errNoDenial)
		return r
	}
	t0 := b.first()
	for _, frac := range []float64{0.72, 1.12} {
		if r.err = sleepUntil(ctx, t0.sent.Add(time.Duration(frac*float64(w)))); r.err != nil {
			return r
		}
		o, err := e.p.do(ctx, id, 0)
		if err != nil {
			r.err = err
			return r
		}
		if o.admitted() {
			r.epoch = frac < 1
			r.back = o.mid().Sub(t0.mid())
			return r
		}
	}
	return r
}

// errUnplaced is a halves probe whose answers came too late to tell which
// window, or which part of a log, each phase's requests counted in.
var errUnplaced = errors.New("its answers came too late to place its requests in the window")

// halves tells a fixed window from a sliding log, once more when the
// first try's answers came too late to place (a stall) and time is left
// for it; see halvesOnce.
func (e *engine) halves(ctx context.Context, anchor time.Time, w time.Duration, L int) alignProbe {
	r := e.halvesOnce(ctx, anchor, w, L)
	if errors.Is(r.err, errUnplaced) && e.remaining() > w*23/10 {
		again := r.err
		r = e.halvesOnce(ctx, anchor, w, L)
		r.again = again
	}
	return r
}

// halvesOnce sends half a fresh identity's quota just after a known reset
// and the rest half a window later, then counts what comes back one
// window after the first half: a window gives the whole quota, a log only
// the first half. The later phases are timed from the first half's
// answers, so a first half answered late still ages out of a log, and a
// window that opened with its late first request has ended, before the
// count. A probe whose answers came too late to keep each phase where it
// belongs says so (errUnplaced).
func (e *engine) halvesOnce(ctx context.Context, anchor time.Time, w time.Duration, L int) alignProbe {
	var r alignProbe
	id, err := e.p.newID()
	if err != nil {
		r.err = err
		return r
	}
	t0 := at(anchor, w, 0.03)
	if r.err = sleepUntil(ctx, t0); r.err != nil {
		return r
	}
	first, err := e.burst(ctx, id, 0, (L+1)/2)
	if err != nil {
		r.err = err
		return r
	}
	r.first = first.admitted
	answered := first.obs[len(first.obs)-1].recv
	if r.err = sleepUntil(ctx, answered.Add(w/2)); r.err != nil {
		return r
	}
	second, err := e.burst(ctx, id, 0, min(L+10, e.p.left(id)-L-10))
	if r.second, r.err = second.admitted, err; err != nil {
		return r
	}
	if r.err = sleepUntil(ctx, answered.Add(w*108/100)); r.err != nil {
		return r
	}
	third, err := e.burst(ctx, id, 0, min(L+10, e.p.left(id)))
	if r.n, r.err = third.admitted, err; err != nil {
		return r
	}
	r.err = placed(first.obs, second.obs, third.obs, t0.Add(-w*3/100), w)
	return r
}

// placed checks a halves probe's timing: the second half counted in the
// first half's window, whether that window is shared (opened at edge) or
// opened by the first request; and the count came before the second
// half's log entries aged out. The first half's entries aged out, and a
// window it opened ended, by the schedule (the count waits on its
// answers).
func placed(first, second, third []obs, edge time.Time, w time.Duration) error {
	if len(first) == 0 || len(second) == 0 || len(third) == 0 {
		return nil
	}
	lastSecond := second[len(second)-1].recv
	switch {
	case !lastSecond.Before(first[0].sent.Add(w)) || !lastSecond.Before(edge.Add(w)):
		return fmt.Errorf("%w: the second half's last answer came %v after the first half was sent, not within the window (%v)",
			errUnplaced, lastSecond.Sub(first[0].sent).Round(time.Millisecond), w)
	case !third[len(third)-1].recv.Before(second[0].sent.Add(w)):
		return fmt.Errorf("%w: the count's last answer came %v after the second half was sent, once its entries could have aged out (%v)",
			errUnplaced, third[len(third)-1].recv.Sub(second[0].sent).Round(time.Millisecond), w)
	}
	return nil
}

// lockout handles denials that count: the quota comes back only after a
// quiet spell. The quiet time needed is found by halving on identity s.
func (e *engine) lockout(ctx context.Context, s int, bA, bS burstResult, ph phaseOneResult) error {
	p := &e.res.Policy
	L := bA.admitted
	p.Limit = int64(L)
	t := true
	p.DenialsCount = &t
	p.Algorithm = FixedWindow
	p.Aligned = AlignFirstRequest
	hs := e.p.history(s)
	// The gap before s's admission was long enough, the one before its
	// last denial was not.
	var lo, hi time.Duration
	for i := 1; i < len(hs) && ph.sAdmit != nil; i++ {
		if hs[i].sent.Equal(ph.sAdmit.sent) {
			hi = hs[i].sent.Sub(hs[i-1].recv)
			if i >= 2 && hs[i-1].denied() && hs[i-2].denied() {
				lo = hs[i-1].sent.Sub(hs[i-2].recv)
			}
			break
		}
	}
	e.fig("denials_count", 0.85, "an identity polled densely (%d denials) stayed denied after a second one, probed sparsely, got its quota back: every denied request pushes the reset later", len(ph.aPoll.denials))
	e.fig("limit", 0.85, "%d admitted back to back by a fresh identity before the first denial (status %d)", L, bA.denial.status)
	if hi == 0 {
		e.fig("algorithm", 0.4, "denied requests keep the quota from coming back; the quiet time it needs was not bracketed")
		return nil
	}
	more := ph.sBack - 1
	rounds := 0
	for range 6 {
		if e.p.left(s) < L+3 || 2*hi > e.remaining() {
			break
		}
		mid := (lo + hi) / 2
		last := e.p.history(s)
		if err := sleepUntil(ctx, last[len(last)-1].recv.Add(mid)); err != nil {
			return err
		}
		o, err := e.p.do(ctx, s, 0)
		if err != nil {
			return err
		}
		rounds++
		if o.admitted() {
			hi = mid
			if _, _, err := e.drain(ctx, s, 0, min(L+10, e.p.left(s))); err != nil && !errors.Is(err, errBudget) {
				return err
			}
		} else {
			lo = mid
		}
	}
	measured := roundWindow((lo + hi) / 2)
	w := roundBetween(measured, lo, hi)
	p.WindowMS = w.Milliseconds()
	e.fig("window_ms", 1-float64(hi-lo)/float64(w), "a quiet spell of %v brings the quota back, one of %v does not (%d halvings); %d came back after the first quiet spell%s", hi.Round(time.Millisecond), lo.Round(time.Millisecond), rounds, 1+more, roundWords(measured, w))
	e.fig("algorithm", 0.6, "the quota comes back whole (%d) after %v without requests, and every request, denied ones included, restarts that wait: a fixed window whose expiry every request refreshes (a sliding log that logs denials would look alike)", 1+more, w)
	e.fig("aligned", 0.6, "the window restarts with every request: it counts from the last one, not from the epoch")
	return nil
}

// bucket handles a quota that trickles back: a token bucket (GCRA counts
// here) or a sliding window's weighted counter. Paced trains measure the
// refill rate; a burst placed just after an epoch boundary tells the two
// apart (the weighted counter gives nothing back until the next one).
func (e *engine) bucket(ctx context.Context, a int, bA burstResult, ph phaseOneResult, back int) error {
	p := &e.res.Policy
	f := false
	p.DenialsCount = &f
	e.fig("denials_count", 0.7, "a second identity probed sparsely got its quota back no sooner than the one polled densely (%d denials while waiting)", len(ph.aPoll.denials))
	tok := ph.aAdmit.mid().Sub(bA.denial.mid())
	r0 := 1 / max(tok.Seconds(), 0.001)
	// A pilot train at about three times the first guess (at least ten a
	// second, so a refill that waited for a boundary costs no more than a
	// second), then the measuring train at twice the pilot's rate:
	// saturated, so each admission is one unit of refill.
	pilot, err := e.train(ctx, a, 0, min(rateToPeriod(3*r0), 100*time.Millisecond), min(12, e.p.left(a)-40))
	if err != nil && !errors.Is(err, errBudget) {
		return err
	}
	r1, n1 := pilot.rate()
	if n1 < 3 || r1 <= 0 {
		r1 = r0
	}
	period := rateToPeriod(2 * r1)
	n := min(e.p.left(a)-5, 70, int(e.remaining()/3/period))
	n = max(n, 0)
	want := int(math.Ceil(25 * 2)) // about 25 admissions at twice the rate
	n = min(n, want)
	tr, err := e.train(ctx, a, 0, period, n)
	if err != nil && !errors.Is(err, errBudget) {
		return err
	}
	r, k := tr.rate()
	if k < 3 {
		r, k = r1, n1
	}
	p.RatePerS = roundRate(r)
	e.fig("rate_per_s", 1-2/float64(max(k, 2)), "a train at %.3g/s after the quota was spent admitted %d at %.4g/s (the pilot at %.3g/s: %.4g/s)", 1/period.Seconds(), k, r, 3*r0, r1)
	dur := bA.denial.mid().Sub(bA.first().mid()).Seconds()
	burst := float64(bA.admitted) - r*dur
	p.Burst = math.Round(max(burst, 1))
	e.fig("burst", 0.85, "%d admitted back to back by a fresh identity in %.1fms, less the %.2f the refill added meanwhile", bA.admitted, dur*1000, r*dur)
	// Burst / rate is the window a weighted counter would have.
	wp := time.Duration(float64(bA.admitted) / r * float64(time.Second))
	if wp*16/10 > e.remaining() || e.p.maxIDs-len(e.p.counted()) < 2 {
		p.Algorithm = TokenBucket
		p.Aligned = AlignNone
		e.fig("algorithm", 0.5, "the quota trickles back at a steady rate (%.4g/s) after a burst of %d; no time was left to rule out a sliding window of %v", r, bA.admitted, wp.Round(time.Millisecond))
		return nil
	}
	// Two fresh identities spend their quota a third of a would-be window
	// apart and watch it trickle back: a bucket starts refilling at once,
	// a weighted counter only at its next boundary (and one of the two
	// spent its quota well before that boundary).
	var tr1, tr2 trickle
	var wg sync.WaitGroup
	nice := niceWindow(wp)
	wg.Go(func() { tr1 = e.trickle(ctx, nextPhase(time.Now(), nice, 0.1), wp, r, bA.admitted) })
	wg.Go(func() { tr2 = e.trickle(ctx, nextPhase(time.Now(), nice, 0.45), wp, r, bA.admitted) })
	wg.Wait()
	for _, t := range []trickle{tr1, tr2} {
		if t.err != nil && !errors.Is(t.err, errBudget) && !errors.Is(t.err, errNoDenial) {
			return t.err
		}
	}
	late := tr1
	if tr2.ok() && (!tr1.ok() || tr2.wait > tr1.wait) {
		late = tr2
	}
	tokWait := 3 / r
	if late.ok() && late.wait.Seconds() > max(tokWait, 0.3*wp.Seconds()) && late.slope > 0 {
		p.Algorithm = SlidingWindow
		p.Limit = int64(bA.admitted)
		p.RatePerS, p.Burst = 0, 0
		delete(e.res.Policy.Evidence, "rate_per_s")
		delete(e.res.Policy.Evidence, "burst")
		// After a window that admitted the whole quota L, the weighted
		// counter lets one more through every W/L: the window is L times
		// the spacing of the trickle.
		measured := roundWindow(time.Duration(float64(bA.admitted) * late.slope * float64(time.Second)))
		w := roundBetween(measured, measured*98/100, measured*102/100)
		p.WindowMS = w.Milliseconds()
		p.Aligned = AlignEpoch
		e.fig("algorithm", 0.8, "the quota trickles back at about %.4g/s, but a fresh identity that spent it got nothing back for %v (a bucket refills one in %v), then one every %.3gs: a weighted two-window counter whose next window had begun",
			r, late.wait.Round(time.Millisecond), time.Duration(float64(time.Second)/r).Round(time.Millisecond), late.slope)
		e.fig("limit", 0.85, "%d admitted back to back by a fresh identity before the first denial", bA.admitted)
		e.fig("window_ms", 0.75, "the limit (%d) times the spacing of the admissions once the next window began (%.4gs, from %d admissions): %v%s", bA.admitted, late.slope, late.n, measured, roundWords(measured, w))
		e.fig("aligned", 0.7, "the quota came back only once a boundary passed, the same for every identity")
		return nil
	}
	p.Algorithm = TokenBucket
	p.Aligned = AlignNone
	waits := fmt.Sprintf("%v and %v", tr1.wait.Round(time.Millisecond), tr2.wait.Round(time.Millisecond))
	e.fig("algorithm", 0.85, "after a burst of %d the quota trickles back one at a time at a steady %.4g/s, starting at once: two fresh identities spent a third of a would-be %v window apart got their first back after %s",
		bA.admitted, r, wp.Round(time.Millisecond), waits)
	e.fig("aligned", 0.8, "a bucket has no windows")
	e.note("a token bucket and GCRA admit the same requests, so they are one class here")
	return nil
}

// trickle is how a spent quota came back: the wait from the denial to
// the first admission, then the spacing of the next ones.
type trickle struct {
	wait  time.Duration
	slope float64 // seconds between admissions
	n     int
	err   error
}

func (t trickle) ok() bool { return t.err == nil && t.n > 0 }

// trickle spends a fresh identity's quota at start and polls it at a
// quarter of the refill period for up to 1.4 would-be windows.
func (e *engine) trickle(ctx context.Context, start time.Time, wp time.Duration, r float64, quota int) trickle {
	var out trickle
	id, err := e.p.newID()
	if err != nil {
		out.err = err
		return out
	}
	if out.err = sleepUntil(ctx, start); out.err != nil {
		return out
	}
	b, err := e.burst(ctx, id, 0, min(quota+10, e.p.left(id)))
	if err != nil || b.denial == nil {
		out.err = errors.Join(err, errNoDenial)
		return out
	}
	span := wp * 14 / 10
	period := max(rateToPeriod(4*r), span/time.Duration(max(e.p.left(id)-5, 1)))
	n := int(span / period)
	tr, err := e.train(ctx, id, 0, period, n)
	if err != nil && !errors.Is(err, errBudget) {
		out.err = err
		return out
	}
	adm := tr.admittedObs()
	out.n = len(adm)
	if len(adm) == 0 {
		out.wait = span
		return out
	}
	out.wait = adm[0].mid().Sub(b.denial.mid())
	if len(adm) >= 3 {
		// The spacing of the admissions after the first, by least squares.
		xs, ys := make([]float64, len(adm)), make([]float64, len(adm))
		for i, o := range adm {
			xs[i], ys[i] = float64(i), o.mid().Sub(adm[0].mid()).Seconds()
		}
		out.slope = slopeOf(xs, ys)
	}
	return out
}

// slopeOf is the least-squares slope of ys over xs.
func slopeOf(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// roundBetween is the round figure niceWindow finds for w when it lies
// within what was measured, [lo, hi]; else w.
func roundBetween(w, lo, hi time.Duration) time.Duration {
	if c := niceWindow(w); c >= lo && c <= hi {
		return c
	}
	return w
}

// roundWords says that a round figure was taken for a measured one.
func roundWords(measured, w time.Duration) string {
	if measured == w {
		return ""
	}
	return fmt.Sprintf("; the round %v lies within what was measured", w)
}

// niceWindow is w rounded to the round figure within 8% of it that a
// configuration would name (1s, 2s, 5s, 10s, 1m, ...), else w: epoch
// phases of a window only mean something for its exact length.
func niceWindow(w time.Duration) time.Duration {
	for _, unit := range []time.Duration{time.Hour, time.Minute, time.Second, time.Millisecond} {
		for _, m := range []float64{1, 2, 3, 5, 10, 15, 20, 30, 60, 100, 200, 500} {
			c := time.Duration(m * float64(unit))
			if d := float64(w-c) / float64(c); d > -0.08 && d < 0.08 {
				return c
			}
		}
	}
	return w
}

// queue handles a limiter that answered late instead of denying: a
// leaky bucket as a queue. The delays give its rate; requests sent all at
// once give its depth.
func (e *engine) queue(ctx context.Context, a int, bA burstResult) error {
	p := &e.res.Policy
	e.res.Found = true
	p.Algorithm = LeakyBucket
	p.Aligned = AlignNone
	var gaps []float64
	for i := 1; i < len(bA.obs); i++ {
		if bA.obs[i].admitted() && bA.obs[i-1].admitted() && bA.obs[i].latency() > 5*time.Millisecond {
			gaps = append(gaps, bA.obs[i].recv.Sub(bA.obs[i-1].recv).Seconds())
		}
	}
	slices.Sort(gaps)
	r0 := 0.0
	if len(gaps) > 0 {
		r0 = 1 / gaps[len(gaps)/2]
	}
	q, err := e.p.newID()
	if err != nil {
		return err
	}
	n := min(e.p.left(q)-5, 40)
	got, err := e.together(ctx, q, 0, n)
	if err != nil {
		return err
	}
	qb := readQueueBatch(got, r0)
	if qb.denied > 0 {
		p.DeniedStatus = qb.status
	}
	p.RatePerS = roundRate(qb.rate)
	e.fig("rate_per_s", 0.8, "requests sent back to back were each answered about %.3gs after the previous one; %d sent at once were admitted one every %.3gs", 1/max(r0, 1e-9), qb.admitted, 1/max(qb.rate, 1e-9))
	p.Burst = qb.depth
	switch {
	case qb.denied == 0:
		e.fig("burst", 0.3, "all %d sent at once were admitted (queued): the queue holds at least that many", n)
		e.note("the queue's depth is at least %d: more at once would need more budget", n)
	case qb.leaked > 0:
		e.fig("burst", 0.8, "of %d sent at once, %d were admitted (the first at once, the rest queued) and %d denied at once (status %d); the sends spread over %v, in which the queue let %.0f more in, so it holds %.0f",
			n, qb.admitted, qb.denied, p.DeniedStatus, qb.spread.Round(time.Millisecond), qb.leaked, qb.depth)
	default:
		e.fig("burst", 0.85, "of %d sent at once, %d were admitted (the first at once, the rest queued) and %d denied at once (status %d)", n, qb.admitted, qb.denied, p.DeniedStatus)
	}
	e.fig("algorithm", 0.85, "no request sent back to back was denied, but each waited about one period: the limiter queues (admits late) instead of denying")
	e.retryAfter(false)
	return nil
}

// queueBatch is what a batch sent at once to a queue shows: how many were
// admitted and denied (status, the denials' status), the rate the queued
// answers left at, the queue's depth, and what the batch's sends took
// (spread) and let in beyond the depth meanwhile (leaked).
type queueBatch struct {
	admitted, denied int
	status           int
	rate, depth      float64
	spread           time.Duration
	leaked           float64
}

// readQueueBatch reads got, a batch sent at once to a queue, by receipt;
// r0 is the rate seen from requests sent back to back, kept when too few
// were admitted to time. The queued answers leave one a period, so the
// rate is the median gap between them (an answer held up on a busy
// machine does not shift it). "At once" takes the sends some time, and
// the queue lets one more in for each period that passes meanwhile: the
// depth is the admitted less those, once the queue was full (a denial).
func readQueueBatch(got []obs, r0 float64) queueBatch {
	var q queueBatch
	var adm []obs
	for _, o := range got {
		switch {
		case o.admitted():
			adm = append(adm, o)
		case o.denied():
			q.denied++
			q.status = o.status
		}
	}
	q.admitted = len(adm)
	q.rate = r0
	if len(adm) >= 4 {
		gaps := make([]float64, 0, len(adm)-1)
		for i := 1; i < len(adm); i++ {
			gaps = append(gaps, adm[i].recv.Sub(adm[i-1].recv).Seconds())
		}
		slices.Sort(gaps)
		if g := gaps[len(gaps)/2]; g > 0 {
			q.rate = 1 / g
		}
	}
	q.depth = float64(len(adm))
	if q.denied == 0 || len(got) == 0 {
		return q
	}
	// full is when the first denial came back: the queue was full by then.
	first, last := got[0].sent, got[0].sent
	var full time.Time
	for _, o := range got {
		if o.sent.Before(first) {
			first = o.sent
		}
		if o.sent.After(last) {
			last = o.sent
		}
		if o.denied() && (full.IsZero() || o.recv.Before(full)) {
			full = o.recv
		}
	}
	q.spread = last.Sub(first)
	q.leaked = math.Floor(q.rate * q.spread.Seconds())
	// An admission sent after a denial came back found the queue full
	// before it and got in by a slot let go since: a leak seen, however
	// short the sends' spread read (a send held up on the way arrives
	// later than it was stamped).
	seen := 0
	for _, o := range adm {
		if o.sent.After(full) {
			seen++
		}
	}
	q.leaked = max(q.leaked, float64(seen))
	q.depth = max(1, q.depth-q.leaked)
	return q
}

// noDenial handles a target that admitted every request sent back to
// back: many at once may still meet a concurrency limit.
func (e *engine) noDenial(ctx context.Context, bA burstResult) error {
	p := &e.res.Policy
	c, err := e.p.newID()
	if err != nil {
		return err
	}
	n := min(e.p.left(c)/2, 50)
	got, err := e.together(ctx, c, 0, n)
	if err != nil {
		return err
	}
	adm, den := count(got)
	if den > 0 {
		again, err := e.together(ctx, c, 0, n)
		if err != nil {
			return err
		}
		adm2, _ := count(again)
		if float64(adm2) >= 0.5*float64(adm) {
			e.res.Found = true
			p.Algorithm = Concurrency
			// Requests of a burst that did not overlap (some held up on the
			// way) only add admissions: what counts is how many admitted
			// were in flight at one instant, the fewer of the two bursts.
			var hold time.Duration
			for _, o := range bA.obs {
				if o.admitted() {
					hold = max(hold, o.latency())
				}
			}
			f1, f2 := inFlight(got, hold), inFlight(again, hold)
			p.Limit = int64(min(f1, f2))
			e.fig("algorithm", 0.6, "%d requests sent back to back were all admitted, but of %d sent at once %d were denied, and %d at once again right after were admitted: it limits requests in flight, not over time", bA.admitted, n, den, adm2)
			e.fig("limit", 0.4, "%d and then %d admitted of %d sent at once, at most %d and %d of them in flight at one instant, the fewer taken: requests that did not overlap only add admissions (the requests' own speed bounds how many overlap)", adm, adm2, n, f1, f2)
			return nil
		}
		e.res.Found = true
		p.Algorithm = Undetermined
		p.Limit = int64(adm)
		e.fig("algorithm", 0.2, "%d back to back were admitted, %d of %d sent at once", bA.admitted, adm, n)
		return nil
	}
	e.res.Found = false
	p.Algorithm = None
	total := len(bA.obs) + n
	e.fig("algorithm", 0.5, "no limit found within %d requests of one identity (%d back to back, %d at once): every one was admitted", total, len(bA.obs), n)
	e.res.Summary = fmt.Sprintf("no limit found within %d requests (%d back to back, then %d at once, as one identity each)", total, len(bA.obs), n)
	return nil
}

// inFlight is the most admitted requests of os that the limiter held at
// one instant. A request is held at most hold (the longest an admitted
// request sent alone took, from its send to its answer: 0 when unknown)
// before its answer, and never before its send: a request that waited on
// the way (a connection dialed, a busy machine) is counted from when it
// can have reached the limiter. A burst that met denials filled the limit,
// so this is at least the limit; requests that reached it after others had
// been answered add admissions, not overlap, so it is nearer the limit
// than their count.
func inFlight(os []obs, hold time.Duration) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, o := range os {
		if !o.admitted() {
			continue
		}
		from := o.sent
		if hold > 0 && o.recv.Add(-hold).After(from) {
			from = o.recv.Add(-hold)
		}
		edges = append(edges, edge{from, 1}, edge{o.recv, -1})
	}
	// An answer and a send at the same instant do not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	return most
}

func count(os []obs) (adm, den int) {
	for _, o := range os {
		if o.admitted() {
			adm++
		} else if o.denied() {
			den++
		}
	}
	return adm, den
}

// rateToPeriod is the period of a train at r per second, at least 1ms.
func rateToPeriod(r float64) time.Duration {
	if r <= 0 {
		return time.Second
	}
	return max(time.Duration(float64(time.Second)/r), time.Millisecond)
}

// roundWindow rounds a measured window to the millisecond.
func roundWindow(w time.Duration) time.Duration { return w.Round(time.Millisecond) }

// roundRate keeps four significant figures.
func roundRate(r float64) float64 {
	if r <= 0 {
		return 0
	}
	m := math.Pow(10, 3-math.Floor(math.Log10(r)))
	return math.Round(r*m) / m
}
