package keyspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/rate"
)

// CustomSpec describes a user's own limiter layout, from flags or from a
// config file (rlctl.yaml):
//
//	schemas:
//	  - name: myrl
//	    pattern: "myrl:{id}"      # {id} is the identity; {window} a window index
//	    type: string              # string (counter), hash or zset (log)
//	    window: 1m
//	    limit: 100
//	    ttl: 1m                   # optional; defaults to the window
type CustomSpec struct {
	Name    string        `yaml:"name"`
	Pattern string        `yaml:"pattern"`
	Type    string        `yaml:"type"`
	Window  time.Duration `yaml:"window"`
	TTL     time.Duration `yaml:"ttl"`
	Limit   int64         `yaml:"limit"`
}

// Config is the content of rlctl.yaml as far as key schemas go.
type Config struct {
	Schemas []CustomSpec `yaml:"schemas"`
}

// ParseConfig reads a config file's schemas. Unknown fields are errors
// naming the file and line, so a typo never silently drops a setting.
func ParseConfig(name string, data []byte) ([]*Schema, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		// One line per problem, each naming the file: "rlctl.yaml: line 3:
		// field windw not found in type keyspace.CustomSpec".
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: %s", name, strings.Join(te.Errors, "; "))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []*Schema
	for i, spec := range cfg.Schemas {
		s, err := CustomSchema(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: schemas[%d]: %w", name, i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// CustomSchema builds a schema from a user's layout description.
func CustomSchema(spec CustomSpec) (*Schema, error) {
	if spec.Name == "" {
		spec.Name = "custom"
	}
	if spec.Type == "" {
		spec.Type = TypeString
	}
	switch spec.Type {
	case TypeString, TypeHash, TypeZSet:
	default:
		return nil, fmt.Errorf("type %q: want string, hash or zset", spec.Type)
	}
	if strings.Count(spec.Pattern, "{id}") != 1 {
		return nil, fmt.Errorf("pattern %q: must contain {id} exactly once", spec.Pattern)
	}
	if strings.Count(spec.Pattern, "{window}") > 1 {
		return nil, fmt.Errorf("pattern %q: {window} at most once", spec.Pattern)
	}
	if spec.Window < 0 || spec.TTL < 0 || spec.Limit < 0 {
		return nil, errors.New("window, ttl and limit must not be negative")
	}
	if spec.TTL == 0 {
		spec.TTL = spec.Window
	}
	var re, glob strings.Builder
	re.WriteString("^")
	idGroup, winGroup, group := 0, 0, 0
	rest := spec.Pattern
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		tok := ""
		if i >= 0 {
			for _, t := range []string{"{id}", "{window}"} {
				if strings.HasPrefix(rest[i:], t) {
					tok = t
				}
			}
		}
		if tok == "" {
			// A brace that is not a placeholder is literal text.
			n := len(rest)
			if i >= 0 {
				n = i + 1
			}
			re.WriteString(regexp.QuoteMeta(rest[:n]))
			glob.WriteString(EscapeGlob(rest[:n]))
			rest = rest[n:]
			continue
		}
		re.WriteString(regexp.QuoteMeta(rest[:i]))
		glob.WriteString(EscapeGlob(rest[:i]))
		group++
		if tok == "{id}" {
			re.WriteString("(.+)")
			glob.WriteString("*")
			idGroup = group
		} else {
			re.WriteString("([0-9]+)")
			glob.WriteString("[0-9]*")
			winGroup = group
		}
		rest = rest[i+len(tok):]
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", spec.Pattern, err)
	}
	if strings.Trim(glob.String(), "*") == "" {
		return nil, fmt.Errorf("pattern %q: matches every key; give it a fixed part such as a prefix", spec.Pattern)
	}
	p := Params{Limit: rate.Limit{Count: spec.Limit, Window: spec.Window}}
	if spec.Limit == 0 || spec.Window == 0 {
		p.Limit = rate.Limit{}
	}
	s := &Schema{
		Name:        spec.Name,
		Description: "user-defined " + spec.Pattern,
		Source:      "user configuration",
		Type:        spec.Type,
		Layout:      fmt.Sprintf("%s %s; TTL %s", spec.Pattern, spec.Type, spec.TTL),
		Clock:       "unknown",
		WindowInKey: winGroup > 0,
		params:      p,
		glob:        glob.String(),
	}
	s.parse = func(s *Schema, key, _ string) (Parsed, bool) {
		m := rx.FindStringSubmatch(key)
		if m == nil {
			return Parsed{}, false
		}
		pk := Parsed{ID: m[idGroup], Window: -1}
		if winGroup > 0 {
			pk.Window, _ = strconv.ParseInt(m[winGroup], 10, 64)
		}
		return pk, true
	}
	s.idKeys = func(s *Schema, id string) ([]string, []string) {
		return []string{strings.Replace(spec.Pattern, "{id}", id, 1)}, nil
	}
	if winGroup > 0 {
		s.idKeys = func(s *Schema, id string) ([]string, []string) {
			k := strings.Replace(spec.Pattern, "{id}", id, 1)
			before, after, _ := strings.Cut(k, "{window}")
			return nil, []string{EscapeGlob(before) + "[0-9]*" + EscapeGlob(after)}
		}
	}
	ttl := spec.TTL
	s.ttl = func(*Schema, Parsed) time.Duration { return ttl }
	switch spec.Type {
	case TypeString:
		s.interpret = interpretCounter
	case TypeZSet:
		s.interpret = interpretLog
	default:
		s.interpret = func(s *Schema, k *Key, now time.Time) {
			k.Meaning = fmt.Sprintf("hash with %d fields", len(k.Fields))
		}
	}
	return s, nil
}
