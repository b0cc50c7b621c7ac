package scenario_test

import (
	"github.com/rlctl/rlctl/internal/scenario"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFieldsDocumented: every field the decoder accepts has documentation,
// every enumeration value says what it does, and no documentation names a
// field the decoder does not accept.
func TestFieldsDocumented(t *testing.T) {
	t.Parallel()
	fields := scenario.Fields()
	paths := map[string]bool{}
	for _, f := range fields {
		paths[f.Path] = true
		if f.Doc == "" {
			t.Errorf("%s: accepted by the decoder but not documented (add it to fieldDocs)", f.Path)
		}
		if f.Type == scenario.TypeEnum {
			for _, v := range f.Values {
				if f.ValueDocs[v] == "" {
					t.Errorf("%s: value %q is not documented (add it to valueDocs)", f.Path, v)
				}
			}
		}
		for v := range f.ValueDocs {
			if !slices.Contains(f.Values, v) {
				t.Errorf("%s: documents value %q, which the decoder does not accept", f.Path, v)
			}
		}
	}
	docs, values := scenario.Docs()
	for _, fd := range docs {
		if !paths[fd.Path] {
			t.Errorf("%s is documented, but the decoder does not accept it", fd.Path)
		}
	}
	for p := range values {
		if !paths[p] {
			t.Errorf("the values of %s are documented, but the decoder does not accept it", p)
		}
	}
}

// TestFieldsAreWhatTheDecoderAccepts holds Fields against the decoder's
// own answer: at every mapping, an unknown field's error lists the fields
// accepted there, and they must be exactly the ones Fields reports.
func TestFieldsAreWhatTheDecoderAccepts(t *testing.T) {
	t.Parallel()
	fields := scenario.Fields()
	children := map[string][]string{"": nil}
	for _, f := range fields {
		parent, name := "", f.Path
		if i := strings.LastIndex(f.Path, "."); i >= 0 {
			parent, name = f.Path[:i], f.Path[i+1:]
		}
		children[parent] = append(children[parent], name)
		if f.Type == scenario.TypeMapping {
			children[f.Path] = children[f.Path][:0:0]
		}
		if f.Type == "list of mappings" {
			children[f.Path+"[]"] = children[f.Path+"[]"][:0:0]
		}
	}
	wantRE := regexp.MustCompile(`unknown field \(want one of ([^)]*)\)`)
	for parent, names := range children {
		doc := nest(parent, "zz_unknown: 1")
		_, err := scenario.Parse([]byte(doc), "f.yaml")
		m := wantRE.FindStringSubmatch(errString(err))
		if m == nil {
			t.Errorf("%q: no unknown-field error for\n%s\ngot: %v", parent, doc, err)
			continue
		}
		got := strings.Split(m[1], ", ")
		slices.Sort(names)
		if !slices.Equal(got, names) {
			t.Errorf("%q: the decoder accepts %v, Fields lists %v", parent, got, names)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// nest writes line at path ("target.endpoints[]") in a YAML document.
func nest(path, line string) string {
	if path == "" {
		return line + "\n"
	}
	var b strings.Builder
	indent := ""
	for part := range strings.SplitSeq(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		b.WriteString(indent + name + ":\n")
		indent += "  "
		if list {
			b.WriteString(indent + "- ")
			indent += "  "
			b.WriteString(line + "\n")
			return b.String()
		}
	}
	b.WriteString(indent + line + "\n")
	return b.String()
}
