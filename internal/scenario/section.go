package scenario

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// A Section is one target kind's part of the file format: the fields it
// adds under target, their defaults, the rules between them, and the words
// `rlctl help scenarios` prints for them. Each kind registers its section
// from its own package (target.Register does it), so this package learns a
// kind without naming its fields.
type Section struct {
	// Kind is the target.kind value.
	Kind string
	// Doc says what the kind is, for help on target.kind.
	Doc string
	// Remote is set when the kind's gateways are not rlctl's: they keep
	// their own Redis (target.redis is theirs, never defaulted) and key
	// their limit themselves.
	Remote bool
	// New returns the kind's own fields, zero, for the decoder to fill;
	// the value ends in Target.Config. Nil: the kind keeps its fields in
	// Target itself (a simulated target's design options, which reports
	// and the ceiling read too).
	New func() any
	// Fields are the target fields the kind adds, decoding into cfg (a
	// value New returned, nil without New) or into t.
	Fields func(d Decoder, t *Target, cfg any) map[string]Handler
	// Docs documents the kind's fields in the order help shows them.
	Docs []FieldDoc
	// ValueDocs says what the values of the kind's enumerations do.
	ValueDocs map[string]map[string]string
	// Defaults fills what the file left unset. It runs first among the
	// defaults, so the others see what it sets (an http target's gateways).
	Defaults func(t *Target, set func(path string) bool)
	// Validate checks the kind's own rules. It runs after every default
	// and reads the files the section names (relative to the scenario).
	Validate func(c Check, sc *Scenario)
	// ValidateFault checks one fault on a target of this kind, at path;
	// nil: the gateways are rlctl's and every fault of the format applies.
	ValidateFault func(c Check, t *Target, f Fault, path string)
	// Describe says what the target is in a few words, for reports; nil:
	// its kind and gateways.
	Describe func(t Target) string
}

// FieldDoc is one field's documentation: its path and a sentence or two.
type FieldDoc struct{ Path, Doc string }

var registry struct {
	sync.RWMutex
	sections map[string]Section
}

// RegisterSection makes a kind's section known. A second section of one
// kind is a programming error.
func RegisterSection(s Section) {
	registry.Lock()
	if registry.sections == nil {
		registry.sections = map[string]Section{}
	}
	_, dup := registry.sections[s.Kind]
	if !dup && s.Kind != "" && (s.New == nil || s.Fields != nil) {
		registry.sections[s.Kind] = s
	}
	registry.Unlock()
	if dup || s.Kind == "" || (s.New != nil && s.Fields == nil) {
		panic(fmt.Sprintf("scenario: section %q registered twice or incomplete", s.Kind))
	}
	allPaths.reset() // after the registry's lock: fieldPaths takes the two the other way round
}

// Kinds lists the target kinds registered: the default first, then the
// others sorted.
func Kinds() []string {
	var out []string
	for _, s := range sections() {
		out = append(out, s.Kind)
	}
	return out
}

// sectionOf returns kind's section; a kind without one has none of its own
// fields.
func sectionOf(kind string) (Section, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.sections[kind]
	return s, ok
}

// sections are the registered sections, in Kinds order.
func sections() []Section {
	registry.RLock()
	out := make([]Section, 0, len(registry.sections))
	for _, s := range registry.sections {
		out = append(out, s)
	}
	registry.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Kind, out[j].Kind
		if (a == KindSimulated) != (b == KindSimulated) {
			return a == KindSimulated
		}
		return a < b
	})
	return out
}

// ConfigAs is t's section fields as the kind's type T (what its New
// returned); a zero T when t is of another kind.
func ConfigAs[T any](t Target) *T {
	if c, ok := t.Config.(*T); ok {
		return c
	}
	return new(T)
}

// Handler decodes one field: a section builds its handlers with Decoder's
// helpers, so every mistake names file, line and field.
type Handler = func(n *yaml.Node, path string)

// Decoder is what a section decodes its fields with.
type Decoder struct{ d *decoder }

// String decodes a string.
func (x Decoder) String(dst *string) Handler { return x.d.str(dst) }

// Strings decodes a list of strings.
func (x Decoder) Strings(dst *[]string) Handler { return x.d.strList(dst) }

// StringMap decodes a mapping of strings.
func (x Decoder) StringMap(dst *map[string]string) Handler { return x.d.strMap(dst) }

// Enum decodes a string that must be one of allowed; what names it in
// messages ("algorithm").
func (x Decoder) Enum(dst *string, what string, allowed []string) Handler {
	return x.d.enum(dst, what, allowed)
}

// Count decodes a non-negative integer.
func (x Decoder) Count(dst *int64) Handler { return x.d.count64(dst) }

// Number decodes a number.
func (x Decoder) Number(dst *float64) Handler { return x.d.number(dst) }

// Duration decodes a non-negative duration like 50ms.
func (x Decoder) Duration(dst *time.Duration) Handler { return x.d.duration(dst) }

// Bool decodes true or false.
func (x Decoder) Bool(dst *bool) Handler { return x.d.boolean(dst) }

// Mapping decodes a mapping whose fields are handlers.
func (x Decoder) Mapping(handlers map[string]Handler) Handler {
	return func(n *yaml.Node, p string) { x.d.fields(n, p, handlers) }
}

// Ints decodes a list of integers from lo to hi; what names one in
// messages ("an HTTP status").
func (x Decoder) Ints(dst *[]int, lo, hi int64, what string) Handler {
	return func(n *yaml.Node, path string) {
		out := []int{}
		x.d.seq(n, path, func(_ int, item *yaml.Node, p string) {
			v, ok := x.d.integer(item, p)
			if !ok {
				return
			}
			if v < lo || v > hi {
				x.d.errorf(item.Line, p, "want %s from %d to %d, got %d", what, lo, hi, v)
				return
			}
			out = append(out, int(v))
		})
		*dst = out
	}
}

// Check is what a section validates with: it reports mistakes at a field's
// line and reads the files the scenario names.
type Check struct {
	d   *decoder
	bad func(path, format string, args ...any)
}

// Errorf reports a mistake in the field at path (at its line, or its
// nearest parent's).
func (c Check) Errorf(path, format string, args ...any) { c.bad(path, format, args...) }

// Set reports whether the file named the field at path.
func (c Check) Set(path string) bool { return c.d.lines[path] > 0 }

// Failed reports whether the field at path was found wrong while decoding,
// so a rule does not reason from the default that stands in for it.
func (c Check) Failed(path string) bool { return c.d.failed[path] }

// ReadFile reads a file the scenario names, relative to the scenario file,
// and returns its path as resolved.
func (c Check) ReadFile(name string) (string, []byte, error) {
	p := c.d.src.rel(c.d.file, name)
	b, err := c.d.src.read(p)
	return p, b, err
}

// Index is a list item's path: Index("target.urls", 2) is target.urls[2].
func Index(path string, i int) string { return index(path, i) }

// sectionFields are the target fields every registered section adds, each
// decoding into the section's value in configs, and the kind each belongs
// to.
func (d *decoder) sectionFields(t *Target, configs map[string]any, owner map[string]string) map[string]Handler {
	out := map[string]Handler{}
	for _, s := range sections() {
		if s.Fields == nil {
			continue
		}
		var cfg any
		if s.New != nil {
			cfg = s.New()
			configs[s.Kind] = cfg
		}
		for name, h := range s.Fields(Decoder{d}, t, cfg) {
			if _, dup := out[name]; dup {
				panic(fmt.Sprintf("scenario: target.%s belongs to %s and %s", name, owner[name], s.Kind))
			}
			out[name], owner[name] = h, s.Kind
		}
	}
	return out
}

// kindDocs are the kinds' documentation of target.kind's values.
func kindDocs() map[string]string {
	m := map[string]string{}
	for _, s := range sections() {
		m[s.Kind] = s.Doc
	}
	return m
}

// sectionDocs are every section's field docs, in Kinds order.
func sectionDocs() ([]FieldDoc, map[string]map[string]string) {
	var docs []FieldDoc
	values := map[string]map[string]string{}
	for _, s := range sections() {
		docs = append(docs, s.Docs...)
		for p, v := range s.ValueDocs {
			values[p] = v
		}
	}
	return slices.Clip(docs), values
}
