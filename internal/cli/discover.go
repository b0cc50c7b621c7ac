package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/atomicfile"
	"github.com/rlctl/rlctl/internal/discover"
	"github.com/rlctl/rlctl/internal/exitcode"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/target/httptarget"
)

type discoverOptions struct {
	f    *Factory
	URLs []string
	// Budget is the most requests any one identity is sent.
	Budget      int
	MaxDuration time.Duration
	// How the identity travels: a header, a query parameter or a source
	// address from a prefix.
	IdentityHeader string
	IdentityQuery  string
	IdentitySource string
	Method         string
	Body           string
	Headers        []string
	DeniedStatus   []int
	RequestTimeout time.Duration
	// Scenario, when set, is where a scenario pinning the policy is
	// written.
	Scenario string
}

const discoverLong = `Infer the rate-limit policy an HTTP endpoint enforces, from probes of its
own: every request carries a fresh identity of the run (rlctl-discover-<random>-N),
so no real user's quota is spent, and no identity is ever sent more than
--budget requests; the whole run ends by --max-duration. Several URLs are
taken as gateways of one deployment, probed one after another with the same
identity to find whether they share the limit.

How it probes, in order: a burst (requests back to back until the first
denial) finds the quota; a second identity spends its quota alongside; the
first is then polled densely (every 10% of the time since its denial) and
the second sparsely (doubling gaps) until the quota comes back. A quota that
comes back whole is a window or a log: two more resets of the same identity
measure the window, and fresh identities placed at chosen offsets from the
last reset tell the rest. A quota that trickles back is a bucket or a
weighted window: paced trains measure the refill rate, and two fresh
identities spent a third of a would-be window apart tell the two apart.

The figures (-o json puts them under "policy", each one's evidence and
confidence under "policy.evidence"):

  algorithm      fixed-window: the whole quota comes back at once, at a reset;
                 sliding-log: after half the quota at the start of a window
                   and half at its middle, only the first half is back one
                   window after the start (each request ages out on its own);
                 sliding-window: the weighted two-counter estimate; the quota
                   trickles back, but only once an epoch boundary has passed;
                 token-bucket: the quota trickles back at once at a steady
                   rate (GCRA admits the same requests, so it counts here);
                 leaky-bucket: a queue; requests are admitted late instead of
                   denied, and only what overflows the queue is denied;
                 concurrency: requests back to back all pass, many at once
                   do not, and again right after do: a limit on requests in
                   flight, not over time;
                 none: nothing was denied within the budget ("no limit found
                   within N requests"); undetermined: denials came, but the
                   quota did not come back within the budget and duration.
  limit          admitted back to back by a fresh identity before its first
                 denial (windows and logs).
  window_ms      the interval between two resets of one identity (found by
                 polls 2% and then 0.5% apart); for a sliding window, the
                 limit times the spacing of the admissions once its next
                 window began; with denials that count, the quiet time that
                 brings the quota back, found by halving.
  rate_per_s     admissions per second of a saturating train (twice the
                 refill rate) once the burst is spent; for a queue, the pace
                 of the queued answers.
  burst          a fresh identity's back-to-back admissions less what the
                 refill added meanwhile; for a queue, how many sent at once
                 were admitted, less one a period that their sends took
                 (nginx's burst=B admits B+1).
  aligned        epoch: a fresh identity spent half a window after another's
                 reset gets its quota back at that other's next reset (the
                 windows are everyone's); first-request: it gets it back one
                 window after its own first request; none: buckets and logs.
  denials_count  true when the densely polled identity stays denied after
                 the sparsely probed one got its quota back: every denied
                 request pushes the reset later, so a client pushing past the
                 limit stays locked out.
  shared         with several URLs: after one identity spent its quota
                 through the first, is it denied at once through the others
                 (one limit together) or admitted (each its own, so the
                 deployment admits that many quotas)?
  retry_after    missing; late (an admission came before the time told);
                 early (an identity that came back when told was denied
                 again); exact otherwise. A hint stated in whole seconds is
                 honest to within a second. header_forms lists the families
                 seen: retry-after, draft-11, draft-07, draft-06, x-ratelimit.
  remaining_exact whether the remaining count each admission of a fresh
                 identity's burst published (RateLimit r, RateLimit-Remaining,
                 X-RateLimit-Remaining) was what was really left, within one.

What it cannot tell apart within its budget, and says so in each figure's
confidence and the notes: a token bucket from GCRA (they admit the same); a
fixed window whose expiry every request refreshes from a sliding log that
logs denials; a window from a log when the quota is under 4; a window longer
than about a sixth of --max-duration (four resets and the alignment probes
take some six windows: raise it, a 1m window needs some 6m);
a quota above the budget (raise --budget). Confidences are the probes' own
margins, not statistical guarantees.

--scenario FILE writes a scenario for 'rlctl verify': the same http target,
the discovered limit, one identity under steady overload, and thresholds
that hold for the policy found and fail for one twice as loose, so CI can pin
it. https:// URLs use the global --tls-ca, --tls-cert, --tls-key and
--tls-skip-verify.

Exit status 1 means no limit was found within the budget (or the target
answered mostly errors): the result is still printed. A target that cannot
be reached (closed port, no answer within --request-timeout) is exit 3.
`

func newCmdDiscover(f *Factory, runF func(*discoverOptions) error) *cobra.Command {
	opts := &discoverOptions{f: f}
	cmd := &cobra.Command{
		Use:   "discover URL [URL...]",
		Short: "Infer the policy an endpoint enforces: class, limit, window or rate and burst, alignment, sharing, Retry-After",
		Long:  discoverLong,
		Example: `  rlctl discover http://127.0.0.1:8080/
  rlctl discover --identity-query api_key https://api.example.com/v1/ping -o json
  rlctl discover http://gw-1:8080/ http://gw-2:8080/ --scenario pinned.yaml && rlctl verify pinned.yaml
  rlctl discover --identity-source 127.0.1.0/28 --denied-status 503 http://127.0.0.1:8081/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URLs = args
			if err := opts.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runDiscover(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Budget, "budget", discover.DefaultBudget, "most requests sent to any one identity (never exceeded)")
	fl.DurationVar(&opts.MaxDuration, "max-duration", discover.DefaultMaxDuration, "longest the run may take")
	fl.StringVar(&opts.IdentityHeader, "identity-header", "", "send the identity in this header (default X-API-Key, unless another way is given)")
	fl.StringVar(&opts.IdentityQuery, "identity-query", "", "send the identity in this query parameter")
	fl.StringVar(&opts.IdentitySource, "identity-source", "", "give each identity its own client address from this prefix (like 127.0.1.0/28), for limits keyed on the client's address")
	fl.StringVar(&opts.Method, "method", "GET", "request method")
	fl.StringVar(&opts.Body, "body", "", "request body; {id} stands for the identity")
	fl.StringArrayVar(&opts.Headers, "header", nil, "a header 'Name: value' sent with every request ({id} stands for the identity); repeatable")
	fl.IntSliceVar(&opts.DeniedStatus, "denied-status", []int{429}, "statuses that mean denied (nginx's limit_req answers 503 unless told otherwise)")
	fl.DurationVar(&opts.RequestTimeout, "request-timeout", 5*time.Second, "how long one request may take")
	fl.StringVar(&opts.Scenario, "scenario", "", "write a scenario verifying the discovered policy to this file")
	return cmd
}

// check turns flag mistakes into usage errors, naming the flag.
func (o *discoverOptions) check(cmd *cobra.Command) error {
	if o.Budget < 20 || o.Budget > 1_000_000 {
		return usageError("--budget %d: want 20 to 1000000 requests per identity", o.Budget)
	}
	if o.MaxDuration <= 0 {
		return usageError("--max-duration must be positive")
	}
	if o.RequestTimeout <= 0 {
		return usageError("--request-timeout must be positive")
	}
	ways := 0
	for _, s := range []string{o.IdentityHeader, o.IdentityQuery, o.IdentitySource} {
		if s != "" {
			ways++
		}
	}
	if ways > 1 {
		return usageError("--identity-header, --identity-query and --identity-source: give one")
	}
	carries := httptarget.CarriesID(o.Body)
	for _, h := range o.Headers {
		if _, _, ok := strings.Cut(h, ":"); !ok {
			return usageError("--header %q: want 'Name: value'", h)
		}
		carries = carries || httptarget.CarriesID(h)
	}
	for _, u := range o.URLs {
		if err := httptarget.CheckURL(u); err != nil {
			return usageError("%v", err)
		}
		carries = carries || httptarget.CarriesID(u)
	}
	if ways == 0 && !carries {
		o.IdentityHeader = "X-API-Key"
	}
	for _, s := range o.DeniedStatus {
		if s < 100 || s > 599 {
			return usageError("--denied-status %d is not an HTTP status", s)
		}
	}
	return nil
}

// headers parses the --header flags.
func (o *discoverOptions) headers() map[string]string {
	if len(o.Headers) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, h := range o.Headers {
		k, v, _ := strings.Cut(h, ":")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// discoverTLS builds the target's TLS settings from the global --tls-*
// flags, as every other command reads them (redisconn.ClientTLS); nil
// when none was given.
func discoverTLS(f *Factory) (*tls.Config, error) {
	if f.TLSCA == "" && f.TLSCert == "" && f.TLSKey == "" && !f.TLSSkipVerify {
		return nil, nil
	}
	return redisconn.ClientTLS(f.RedisOptions(""))
}

func runDiscover(ctx context.Context, opts *discoverOptions) error {
	f := opts.f
	tlsConf, err := discoverTLS(f)
	if err != nil {
		return exitcode.With(err, exitcode.Usage)
	}
	var sources []netip.Addr
	var probeSrc netip.Addr
	if opts.IdentitySource != "" {
		// One address per identity the run may use, and the next for the
		// reachability probe, so it counts against none of them.
		all, err := httptarget.SourceAddrs(opts.IdentitySource, discover.DefaultMaxIdentities+1)
		if err != nil {
			return usageError("--identity-source: %v (discover uses up to %d identities and one probe address)", err, discover.DefaultMaxIdentities)
		}
		sources, probeSrc = all[:discover.DefaultMaxIdentities], all[discover.DefaultMaxIdentities]
	}
	t, err := httptarget.New(httptarget.Options{
		URLs: opts.URLs, Method: opts.Method,
		IdentityHeader: opts.IdentityHeader, IdentityQuery: opts.IdentityQuery,
		Headers: opts.headers(), Body: opts.Body, DeniedStatus: opts.DeniedStatus,
		Timeout: opts.RequestTimeout, TLS: tlsConf, Sources: sources, ProbeSource: probeSrc,
	})
	if err != nil {
		return exitcode.With(err, exitcode.Usage)
	}
	defer t.Close()
	// Check the scenario file can be written before spending any budget.
	if opts.Scenario != "" {
		if err := checkWritable(opts.Scenario); err != nil {
			return usageError("--scenario: %v", err)
		}
	}
	if f.ShowProgress() {
		fmt.Fprintf(f.IO.ErrOut, "rlctl: probing %d URL(s), at most %d requests per identity, at most %v...\n", len(opts.URLs), opts.Budget, opts.MaxDuration)
	}
	res, err := discover.Run(ctx, discover.Options{Target: t, Budget: opts.Budget, MaxDuration: opts.MaxDuration})
	if err != nil {
		return err
	}
	if opts.Scenario != "" && res.Found {
		sc, err := discover.Scenario(res, discover.HTTPTarget{
			URLs: opts.URLs, Method: opts.Method, IdentityHeader: opts.IdentityHeader,
			IdentityQuery: opts.IdentityQuery, IdentitySource: opts.IdentitySource,
			Headers: opts.headers(), Body: opts.Body, RequestTimeout: opts.RequestTimeout,
			TLSCA: f.TLSCA, TLSCert: f.TLSCert, TLSKey: f.TLSKey, TLSSkipVerify: f.TLSSkipVerify,
		})
		switch {
		case errors.Is(err, discover.ErrNoScenario):
			res.Notes = append(res.Notes, fmt.Sprintf("no scenario written: %v", err))
		case err != nil:
			return err
		default:
			if err := atomicfile.Write(opts.Scenario, sc); err != nil {
				return fmt.Errorf("write --scenario: %w", err)
			}
			res.Notes = append(res.Notes, "scenario written to "+opts.Scenario+" (rlctl verify "+opts.Scenario+")")
		}
	}
	if f.JSON() {
		if err := f.WriteJSON(res); err != nil {
			return err
		}
	} else if err := printDiscover(f, res); err != nil {
		return err
	}
	if !res.Found {
		return failed()
	}
	return nil
}

// checkWritable fails when path's directory does not exist or path is a
// directory.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := "."
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		dir = path[:i+1]
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// figureOrder is the order the table shows the figures in.
var figureOrder = []string{"algorithm", "limit", "window_ms", "rate_per_s", "burst", "aligned", "denials_count", "shared", "retry_after", "remaining_exact"}

// printDiscover writes the table: each figure with its value, confidence
// and evidence, then the notes and what the run spent.
func printDiscover(f *Factory, res *discover.Result) error {
	p := res.Policy
	w := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "%s\n\n", res.Summary)
	fmt.Fprintf(w, "figure\tvalue\tconfidence\tevidence\n")
	value := map[string]string{
		"algorithm":   p.Algorithm,
		"aligned":     p.Aligned,
		"retry_after": p.RetryAfter,
	}
	if p.Limit > 0 {
		value["limit"] = strconv.FormatInt(p.Limit, 10)
	}
	if p.WindowMS > 0 {
		value["window_ms"] = fmt.Sprintf("%d (%v)", p.WindowMS, p.Window())
	}
	if p.RatePerS > 0 {
		value["rate_per_s"] = strconv.FormatFloat(p.RatePerS, 'g', 4, 64)
	}
	if p.Burst > 0 {
		value["burst"] = strconv.FormatFloat(p.Burst, 'g', 4, 64)
	}
	if p.DenialsCount != nil {
		value["denials_count"] = strconv.FormatBool(*p.DenialsCount)
	}
	if p.Shared != nil {
		value["shared"] = strconv.FormatBool(*p.Shared)
	}
	if p.RemainingExact != nil {
		value["remaining_exact"] = strconv.FormatBool(*p.RemainingExact)
	}
	for _, k := range figureOrder {
		ev, ok := p.Evidence[k]
		if !ok {
			continue
		}
		v := value[k]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\n", k, v, ev.Confidence, ev.Evidence)
	}
	if len(p.HeaderForms) > 0 {
		fmt.Fprintf(w, "header_forms\t%s\t\t\n", strings.Join(p.HeaderForms, ", "))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	out := f.IO.Out
	for _, n := range res.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	most := 0
	for _, c := range res.PerIdentity {
		most = max(most, c)
	}
	ids := append([]int(nil), res.PerIdentity...)
	sort.Ints(ids)
	_, err := fmt.Fprintf(out, "%d requests from %d identities (at most %d per identity, budget %d) in %v\n",
		res.Requests, len(ids), most, res.Budget, (time.Duration(res.DurationMS) * time.Millisecond).Round(10*time.Millisecond))
	return err
}
