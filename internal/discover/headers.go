package discover

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// retryAfter judges the Retry-After of every denial against what the
// same identity met afterwards: admitted before the time it was told
// (late), or denied when it came back as told (early). With denials that
// count, only the very next request judges a hint (the polls in between
// would have moved the reset themselves).
func (e *engine) retryAfter(denialsCount bool) {
	var total, with, late, early, checked int
	for id := range e.p.counted() {
		h := e.p.history(id)
		for i, d := range h {
			if !d.denied() {
				continue
			}
			total++
			if d.retryAfter < 0 {
				continue
			}
			with++
			at := d.recv.Add(d.retryAfter)
			// A hint rounded up to its precision is honest: only an
			// admission sooner than that counts as late.
			tol := d.precision + 15*time.Millisecond + d.latency()
			for _, n := range h[i+1:] {
				if !n.sent.Before(at.Add(-tol)) {
					break
				}
				if n.admitted() {
					late++
					break
				}
			}
			for j := i + 1; j < len(h); j++ {
				n := h[j]
				if n.admitted() && n.sent.Before(at) {
					break
				}
				if n.sent.Before(at.Add(15*time.Millisecond + d.latency())) {
					continue
				}
				if denialsCount && j != i+1 {
					break
				}
				checked++
				if n.denied() {
					early++
				}
				break
			}
		}
	}
	p := &e.res.Policy
	forms := strings.Join(e.p.forms.Names(), ", ")
	if forms == "" {
		forms = "none"
	}
	switch {
	case total == 0:
		return
	case with == 0:
		p.RetryAfter = RetryMissing
		e.fig("retry_after", 0.9, "none of %d denials carried Retry-After; header forms seen: %s", total, forms)
	case late > 0 && late >= early:
		p.RetryAfter = RetryLate
		e.fig("retry_after", 0.8, "%d of %d denials with Retry-After were followed by an admission before the time they told (%d early); forms: %s", late, with, early, forms)
	case early > 0:
		p.RetryAfter = RetryEarly
		e.fig("retry_after", 0.8, "%d of %d denials whose identity came back when told were denied again; forms: %s", early, checked, forms)
	default:
		p.RetryAfter = RetryExact
		conf := 0.8
		if checked == 0 {
			conf = 0.4
		}
		e.fig("retry_after", conf, "%d of %d denials carried Retry-After; no admission came sooner than told, and after %d of them the identity came back when told and was admitted; forms: %s", with, total, checked, forms)
	}
	if with > 0 && with < total {
		e.note("%d of %d denials carried no Retry-After", total-with, total)
	}
}

// shared spends a fresh identity's quota through the first URL and at
// once asks every other URL for the same identity: a URL that still
// admits keeps a limit of its own, so the deployment's true ceiling is
// the quota times the limits found.
func (e *engine) shared(ctx context.Context) error {
	p := &e.res.Policy
	x, err := e.p.newID()
	if err != nil {
		return err
	}
	quota := int(max(p.Limit, int64(p.Burst)))
	var spent int
	if p.Algorithm == LeakyBucket {
		got, err := e.together(ctx, x, 0, min(quota+5, e.p.left(x)/2))
		if err != nil {
			return err
		}
		spent, _ = count(got)
	} else {
		var denial *obs
		spent, denial, err = e.drain(ctx, x, 0, min(quota+10, e.p.left(x)/2))
		if err != nil {
			return err
		}
		// Only a denial says URL 1's quota is spent: otherwise the other
		// URLs would admit from what is left even when they share it.
		if denial == nil {
			e.note("whether the URLs share one limit was not judged: URL 1 admitted all %d sent for one identity and denied none", spent)
			return nil
		}
	}
	var own []int
	var words []string
	for j := 1; j < e.p.gateways; j++ {
		o, err := e.p.do(ctx, x, j)
		if err != nil {
			return err
		}
		mine := o.admitted()
		if mine && p.Algorithm == LeakyBucket && p.RatePerS > 0 {
			// A shared queue admits late; its own admits at once.
			mine = o.latency().Seconds() < 0.5/p.RatePerS
		}
		if mine {
			own = append(own, j)
			words = append(words, fmt.Sprintf("URL %d admitted at once", j+1))
		} else {
			words = append(words, fmt.Sprintf("URL %d %s", j+1, map[bool]string{true: "admitted late", false: "denied"}[o.admitted()]))
		}
	}
	yes := len(own) == 0
	p.Shared = &yes
	n := e.p.gateways
	if yes {
		e.fig("shared", 0.85, "%d admitted through URL 1 for one identity, then at once: %s: the %d URLs enforce one limit together", spent, strings.Join(words, ", "), n)
		return nil
	}
	e.fig("shared", 0.85, "%d admitted through URL 1 for one identity, then at once: %s: %d of the %d URLs keep a limit of their own, so the deployment admits up to %d times the quota", spent, strings.Join(words, ", "), len(own)+1, n, len(own)+1)
	if len(own) < n-1 {
		e.note("URLs that denied share URL 1's limit; URLs that admitted were not probed against each other")
	}
	return nil
}

// remainingHint checks the remaining count each admission of the first
// burst published against what was really left: after the i-th of L
// admitted, L-i (one off is allowed, for limiters that count the
// request in flight either way).
func (e *engine) remainingHint(b burstResult) {
	L := int64(b.admitted)
	with, match := 0, 0
	i := int64(0)
	for _, o := range b.obs {
		if !o.admitted() {
			continue
		}
		i++
		if o.remaining < 0 {
			continue
		}
		with++
		if d := o.remaining - (L - i); d >= -1 && d <= 1 {
			match++
		}
	}
	if with == 0 {
		return
	}
	ok := match*10 >= with*9
	e.res.Policy.RemainingExact = &ok
	e.fig("remaining_exact", 0.8, "%d of %d admissions of a fresh identity's burst of %d published the remaining count that was really left (within one)", match, with, L)
}
