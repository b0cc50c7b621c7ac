package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/rate"
	"github.com/rlctl/rlctl/internal/suggest"
	"github.com/rlctl/rlctl/internal/threshold"
	"github.com/rlctl/rlctl/internal/workload"
)

// maxNodes bounds the nodes one document may expand to. Aliases let a tiny
// file name a huge tree (the "billion laughs"); walking it must stay cheap.
const maxNodes = 100000

// decoder turns one YAML document into a Scenario, recording every mistake
// and the line of every field it saw (for validation messages).
type decoder struct {
	file   string
	errs   Errors
	lines  map[string]int // field path -> line, for fields present
	budget int
	spent  bool
	// schema, when set, makes the decoder list the fields it accepts
	// instead of decoding: every handler is called once on a probe node
	// and records its path and type (see Fields).
	schema *schema
	// configs are each section's fields as decoded, by kind; owner is the
	// kind each section field belongs to (by its name under target).
	configs map[string]any
	owner   map[string]string
	// src reads the files a section names, relative to file.
	src source
	// failed holds the paths of fields found wrong, so validate does not
	// reason from the default that stands in for one (a misspelt kind is
	// not a simulated target missing its algorithm).
	failed map[string]bool
}

// schema collects the fields a decoder accepts, in the order met.
type schema struct {
	fields []Field
	seen   map[string]bool
}

// probe is the node a schema walk hands every handler: a mapping, so
// nested handlers walk on, and a mismatch for scalar ones (whose errors
// the walk ignores).
var probe = &yaml.Node{Kind: yaml.MappingNode}

// note records path's type during a schema walk and reports whether one is
// running (the handler then decodes nothing). The first type noted for a
// path wins: handlers note before the helpers they call.
func (d *decoder) note(path, typ string, values []string) bool {
	if d.schema == nil {
		return false
	}
	if !d.schema.seen[path] {
		d.schema.seen[path] = true
		d.schema.fields = append(d.schema.fields, Field{Path: path, Type: typ, Values: values})
	}
	return true
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, budget: maxNodes, failed: map[string]bool{}, configs: map[string]any{}, owner: map[string]string{}}
}

func (d *decoder) errorf(line int, path, format string, args ...any) {
	d.failed[path] = true
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// resolve follows aliases and charges the node budget. It returns nil when
// the budget is spent (reported once).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		return nil
	}
	d.budget--
	if d.budget < 0 {
		if !d.spent {
			d.spent = true
			d.errorf(n.Line, "", "document too large: more than %d nodes after expanding aliases", maxNodes)
		}
		return nil
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// describe says what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

// fields walks a mapping node: each key must be in handlers, at most once.
// It returns false when n is not a mapping.
func (d *decoder) fields(n *yaml.Node, path string, handlers map[string]func(v *yaml.Node, path string)) bool {
	if d.schema != nil {
		if path != "" {
			d.note(path, TypeMapping, nil)
		}
		for _, k := range sortedKeys(handlers) {
			handlers[k](probe, join(path, k))
		}
		return true
	}
	n = d.resolve(n)
	if n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "want a mapping, got %s", describe(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			return false
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, path, "want a field name, got %s", describe(k))
			continue
		}
		p := join(path, k.Value)
		if k.Value == "<<" {
			d.errorf(k.Line, path, "merge keys (<<) are not supported")
			continue
		}
		h, ok := handlers[k.Value]
		if !ok {
			here := sortedKeys(handlers)
			d.errorf(k.Line, p, "unknown field%s (want one of %s)", suggest.DidYouMean(k.Value, append(elsewhere(path, k.Value), here...)), strings.Join(here, ", "))
			continue
		}
		if seen[k.Value] {
			d.errorf(k.Line, p, "field given twice")
			continue
		}
		seen[k.Value] = true
		d.lines[p] = k.Line
		h(v, p)
	}
	return true
}

// elsewhere lists the other places a field named key exists, for one
// written at the wrong level: redis at the top is target.redis.
func elsewhere(path, key string) []string {
	here := indexRE.ReplaceAllString(path, "[]")
	var out []string
	for _, f := range fieldPaths() {
		parent, name := "", f
		if i := strings.LastIndexByte(f, '.'); i >= 0 {
			parent, name = f[:i], f[i+1:]
		}
		if name == key && parent != here {
			out = append(out, f)
		}
	}
	// The shallowest first: target.timeout before target.endpoints[].timeout.
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(a, ".") - strings.Count(b, ".") })
	return out
}

// indexRE matches a list index in a field path ("[3]").
var indexRE = regexp.MustCompile(`\[\d+\]`)

// fieldPaths is every field path a file may hold, from the decoder's own
// tables and the sections registered (see Fields), computed once per set
// of sections.
func fieldPaths() []string {
	allPaths.mu.Lock()
	defer allPaths.mu.Unlock()
	if !allPaths.done {
		d := newDecoder("")
		d.schema = &schema{seen: map[string]bool{}}
		d.document(probe)
		for _, f := range d.schema.fields {
			if !strings.HasSuffix(f.Path, "[]") {
				allPaths.list = append(allPaths.list, f.Path)
			}
		}
		allPaths.done = true
	}
	return allPaths.list
}

// allPaths caches fieldPaths; a section registered later resets it.
var allPaths pathCache

type pathCache struct {
	mu   sync.Mutex
	done bool
	list []string
}

func (c *pathCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.list = false, nil
}

func sortedKeys(m map[string]func(*yaml.Node, string)) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: the lists are short and this keeps imports small.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// scalar returns the resolved scalar node, or nil after reporting.
func (d *decoder) scalar(n *yaml.Node, path, want string) *yaml.Node {
	if d.note(path, strings.TrimPrefix(strings.TrimPrefix(want, "an "), "a "), nil) {
		return nil
	}
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n.Line, path, "want %s, got %s", want, describe(n))
		return nil
	}
	return n
}

func (d *decoder) str(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeString, nil) {
			return
		}
		if s := d.scalar(n, path, "a string"); s != nil {
			*dst = s.Value
		}
	}
}

// enum decodes a string that must be one of allowed.
func (d *decoder) enum(dst *string, what string, allowed []string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeEnum, allowed) {
			return
		}
		s := d.scalar(n, path, "a string")
		if s == nil {
			return
		}
		for _, a := range allowed {
			if s.Value == a {
				*dst = s.Value
				return
			}
		}
		d.errorf(s.Line, path, "unknown %s %q%s (want one of %s)", what, s.Value, suggest.DidYouMean(s.Value, allowed), strings.Join(allowed, ", "))
	}
}

func (d *decoder) integer(n *yaml.Node, path string) (int64, bool) {
	if d.note(path, TypeInteger, nil) {
		return 0, false
	}
	s := d.scalar(n, path, "an integer")
	if s == nil {
		return 0, false
	}
	var v int64
	if s.Tag != "!!int" || s.Decode(&v) != nil {
		d.errorf(s.Line, path, "want an integer, got %s", describe(s))
		return 0, false
	}
	return v, true
}

// count decodes a non-negative int no larger than maxV.
func (d *decoder) count(dst *int, maxV int64) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		v, ok := d.integer(n, path)
		if !ok {
			return
		}
		if v < 0 || v > maxV {
			d.errorf(n.Line, path, "want an integer from 0 to %d, got %d", maxV, v)
			return
		}
		*dst = int(v)
	}
}

func (d *decoder) count64(dst *int64) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		v, ok := d.integer(n, path)
		if !ok {
			return
		}
		if v < 0 {
			d.errorf(n.Line, path, "must not be negative, got %d", v)
			return
		}
		*dst = v
	}
}

func (d *decoder) number(dst *float64) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeNumber, nil) {
			return
		}
		s := d.scalar(n, path, "a number")
		if s == nil {
			return
		}
		var v float64
		if (s.Tag != "!!int" && s.Tag != "!!float") || s.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			d.errorf(s.Line, path, "want a number, got %s", describe(s))
			return
		}
		*dst = v
	}
}

func (d *decoder) boolean(dst *bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeBool, nil) {
			return
		}
		s := d.scalar(n, path, "true or false")
		if s == nil {
			return
		}
		if s.Tag != "!!bool" || s.Decode(dst) != nil {
			d.errorf(s.Line, path, "want true or false, got %s", describe(s))
		}
	}
}

func (d *decoder) duration(dst *time.Duration) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeDuration, nil) {
			return
		}
		s := d.scalar(n, path, "a duration like 50ms")
		if s == nil {
			return
		}
		v, err := time.ParseDuration(strings.TrimSpace(s.Value))
		if err != nil {
			d.errorf(s.Line, path, "want a duration like 50ms, got %s", describe(s))
			return
		}
		if v < 0 {
			d.errorf(s.Line, path, "must not be negative, got %s", s.Value)
			return
		}
		*dst = v
	}
}

func (d *decoder) limit(dst *rate.Limit) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeLimit, nil) {
			return
		}
		s := d.scalar(n, path, "a limit like 100/1m")
		if s == nil {
			return
		}
		v, err := rate.Parse(s.Value)
		if err != nil {
			d.errorf(s.Line, path, "%v", err)
			return
		}
		*dst = v
	}
}

// seq walks a sequence, calling each for every item.
func (d *decoder) seq(n *yaml.Node, path string, each func(i int, item *yaml.Node, path string)) {
	if d.note(path, TypeList, nil) {
		each(0, probe, path+"[]")
		return
	}
	n = d.resolve(n)
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, path, "want a list, got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		p := index(path, i)
		d.lines[p] = item.Line
		each(i, item, p)
	}
}

func (d *decoder) strList(dst *[]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		out := []string{}
		d.seq(n, path, func(_ int, item *yaml.Node, p string) {
			if s := d.scalar(item, p, "a string"); s != nil {
				out = append(out, s.Value)
			}
		})
		*dst = out
	}
}

func (d *decoder) strMap(dst *map[string]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if d.note(path, TypeStringMap, nil) {
			return
		}
		n = d.resolve(n)
		if n == nil {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.errorf(n.Line, path, "want a mapping, got %s", describe(n))
			return
		}
		out := map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := d.scalar(n.Content[i], path, "a name")
			if k == nil {
				continue
			}
			p := join(path, k.Value)
			if _, dup := out[k.Value]; dup {
				d.errorf(k.Line, p, "given twice")
				continue
			}
			if v := d.scalar(n.Content[i+1], p, "a string"); v != nil {
				out[k.Value] = v.Value
			}
		}
		*dst = out
	}
}

// document decodes the top-level mapping of one scenario document, or
// returns nil when it is not a mapping.
func (d *decoder) document(root *yaml.Node) *Scenario {
	sc := &Scenario{File: d.file, Line: root.Line}
	ok := d.fields(root, "", map[string]func(*yaml.Node, string){
		"name":           d.str(&sc.Name),
		"description":    d.str(&sc.Description),
		"shows":          d.enum(&sc.Shows, "shows", showsValues),
		"requires":       d.enum(&sc.Requires, "requirement", requirement),
		"limit":          d.limit(&sc.Limit),
		"max_error_rate": d.number(&sc.MaxErrorRate),
		"target":         func(n *yaml.Node, p string) { d.target(n, p, &sc.Target) },
		"traffic":        func(n *yaml.Node, p string) { d.traffic(n, p, &sc.Traffic) },
		"faults": func(n *yaml.Node, p string) {
			sc.Faults = []Fault{}
			d.seq(n, p, func(_ int, item *yaml.Node, p string) {
				f := Fault{Line: item.Line, Gateway: -1}
				d.fields(item, p, map[string]func(*yaml.Node, string){
					"at":          d.duration(&f.At),
					"for":         d.duration(&f.For),
					"action":      d.enum(&f.Action, "fault action", actions),
					"latency":     d.duration(&f.Latency),
					"gateway":     d.count(&f.Gateway, math.MaxUint16),
					"replica_lag": d.duration(&f.ReplicaLag),
					"mode":        d.enum(&f.Mode, "stall mode", stallModes),
				})
				sc.Faults = append(sc.Faults, f)
			})
		},
		"thresholds": func(n *yaml.Node, p string) {
			sc.Thresholds = []threshold.Threshold{}
			d.seq(n, p, func(_ int, item *yaml.Node, p string) {
				s := d.scalar(item, p, "a threshold like \"ceiling <= limit\"")
				if s == nil {
					return
				}
				th, err := threshold.Parse(s.Value)
				if err != nil {
					d.errorf(s.Line, p, "%v", err)
					return
				}
				th.Line = s.Line
				sc.Thresholds = append(sc.Thresholds, th)
			})
		},
	})
	if !ok {
		return nil // not a mapping: nothing to default or validate
	}
	return sc
}

func (d *decoder) target(n *yaml.Node, path string, t *Target) {
	handlers := d.sectionFields(t, d.configs, d.owner)
	for name, h := range map[string]Handler{
		"kind":              d.enum(&t.Kind, "target kind", Kinds()),
		"gateways":          d.count(&t.Gateways, math.MaxUint16),
		"redis":             d.str(&t.Redis),
		"timeout":           d.duration(&t.Timeout),
		"clock_skew":        d.duration(&t.ClockSkew),
		"replicate":         d.count(&t.Replicate, MaxReplicate),
		"replicate_timeout": d.duration(&t.ReplicateTimeout),
		"key":               d.enum(&t.Key, "limit key", keys),
		"sources":           d.count(&t.Sources, math.MaxInt32),
		"endpoints": func(n *yaml.Node, p string) {
			t.Endpoints = []Endpoint{}
			d.seq(n, p, func(_ int, item *yaml.Node, p string) {
				var e Endpoint
				d.fields(item, p, map[string]func(*yaml.Node, string){
					"name":        d.str(&e.Name),
					"share":       d.number(&e.Share),
					"on_error":    d.enum(&e.OnError, "on_error policy", onErrors),
					"on_failover": d.enum(&e.OnFailover, "on_failover policy", onFailovers),
					"timeout":     d.duration(&e.Timeout),
					"local":       d.limit(&e.Local),
				})
				t.Endpoints = append(t.Endpoints, e)
			})
		},
	} {
		if _, dup := handlers[name]; dup {
			panic("scenario: a section adds target." + name + ", a field of every target")
		}
		handlers[name] = h
	}
	d.fields(n, path, handlers)
}

func (d *decoder) traffic(n *yaml.Node, path string, t *Traffic) {
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"pattern":      d.enum(&t.Pattern, "traffic pattern", patterns),
		"rate":         d.limit(&t.Rate),
		"duration":     d.duration(&t.Duration),
		"max_requests": d.count(&t.MaxRequests, MaxRequests),
		"identities":   d.count(&t.Identities, math.MaxInt32),
		"spread":       d.enum(&t.Spread, "spread", spreads),
		"segment":      d.enum(&t.Segment, "segment share", segmentBys),
		"rounds":       d.count(&t.Rounds, math.MaxInt32),
		"align":        d.enum(&t.Align, "align", aligns),
		"model":        d.enum(&t.Model, "traffic model", models),
		"concurrency":  d.count(&t.Concurrency, math.MaxInt32),
		"workers":      d.count(&t.Workers, math.MaxInt32),
		"burst_size":   d.count(&t.BurstSize, math.MaxInt32),
		"think":        d.duration(&t.Think),
		"retry": func(n *yaml.Node, p string) {
			r := &workload.RetryPolicy{}
			d.fields(n, p, map[string]func(*yaml.Node, string){
				"honor":        d.enum(&r.Honor, "retry honor", honors),
				"backoff":      d.enum(&r.Backoff, "retry backoff", backoffs),
				"jitter":       d.enum(&r.Jitter, "retry jitter", jitters),
				"delay":        d.duration(&r.Delay),
				"max_delay":    d.duration(&r.MaxDelay),
				"max_attempts": d.count(&r.MaxAttempts, math.MaxUint8),
			})
			t.Retry = r
		},
	})
}
