package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// maxFileSize bounds a scenario file (and a script it names); scenario
// files are hand-written and small.
const maxFileSize = 4 << 20

// source is where scenario files and the scripts they name are read from.
type source struct {
	read func(name string) ([]byte, error)
	// rel resolves a script path relative to the scenario file.
	rel func(file, script string) string
}

var osSource = source{
	read: readLimited,
	rel: func(file, script string) string {
		if filepath.IsAbs(script) {
			return script
		}
		return filepath.Join(filepath.Dir(file), script)
	},
}

// readLimited reads a regular file of at most maxFileSize. Anything else
// (a FIFO, a device, a directory) is refused before it is opened: opening
// a FIFO would block until a writer came, and a device may never end.
func readLimited(name string) ([]byte, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fileKind(st.Mode()))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxFileSize)
	}
	return b, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

func fsSource(fsys fs.FS) source {
	return source{
		read: func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) },
		rel:  func(file, script string) string { return path.Join(path.Dir(file), script) },
	}
}

// LoadFS reads a file or every *.yaml and *.yml in a directory of fsys,
// for the suite embedded in the binary. Names must be unique.
func LoadFS(fsys fs.FS, name string) ([]*Scenario, error) {
	src := fsSource(fsys)
	files, err := expandFS(fsys, name)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Usage)
	}
	var scs []*Scenario
	var errs Errors
	for _, f := range files {
		s, e := loadFile(src, f)
		scs, errs = append(scs, s...), append(errs, e...)
	}
	errs = append(errs, checkUnique(scs)...)
	return scs, asError(errs)
}

// Load reads files and directories (every *.yaml and *.yml directly in a
// directory, sorted by name). Names must be unique across all of them.
func Load(paths []string) ([]*Scenario, error) {
	var scs []*Scenario
	var errs Errors
	for _, p := range paths {
		files, err := expandOS(p)
		if err != nil {
			errs = append(errs, &Error{File: p, Msg: err.Error()})
			continue
		}
		for _, f := range files {
			s, e := loadFile(osSource, f)
			scs, errs = append(scs, s...), append(errs, e...)
		}
	}
	errs = append(errs, checkUnique(scs)...)
	return scs, asError(errs)
}

func asError(errs Errors) error {
	if len(errs) == 0 {
		return nil
	}
	return exitcode.With(errs, exitcode.Usage)
}

func isYAML(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

func expandOS(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read scenarios: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("read scenario directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && isYAML(e.Name()) {
			out = append(out, filepath.Join(p, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no *.yaml or *.yml scenario files in this directory")
	}
	sort.Strings(out)
	return out, nil
}

func expandFS(fsys fs.FS, name string) ([]string, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read scenarios %q: %w", name, err)
	}
	if !st.IsDir() {
		return []string{name}, nil
	}
	entries, err := fs.ReadDir(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read scenario directory %q: %w", name, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && isYAML(e.Name()) {
			out = append(out, path.Join(name, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml or *.yml scenario files", name)
	}
	sort.Strings(out)
	return out, nil
}

func loadFile(src source, name string) ([]*Scenario, Errors) {
	data, err := src.read(name)
	if err != nil {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("read scenario file: %v", err)}}
	}
	return parse(data, name, src)
}

// Parse decodes scenarios from data as if read from file name. Scripts a
// redis-script target names are read from the file system relative to
// name. It is Load without the file.
func Parse(data []byte, name string) ([]*Scenario, error) {
	scs, errs := parse(data, name, osSource)
	errs = append(errs, checkUnique(scs)...)
	return scs, asError(errs)
}

func parse(data []byte, name string, src source) ([]*Scenario, Errors) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Scenario
	var errs Errors
	for {
		var doc yaml.Node
		err := safeDecode(dec, &doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, syntaxError(name, err, data))
			break // the YAML parser cannot resume after a syntax error
		}
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			continue // an empty document, e.g. after a trailing "---"
		}
		d := newDecoder(name)
		d.src = src
		sc := d.document(doc.Content[0])
		if sc != nil && !d.spent {
			d.applyDefaults(sc)
			d.validate(sc)
		}
		if len(d.errs) > 0 {
			errs = append(errs, d.errs...)
			continue
		}
		out = append(out, sc)
	}
	if len(out) == 0 && len(errs) == 0 {
		// An empty file (or one of empty documents) is no suite: a run
		// of nothing must not pass.
		errs = append(errs, &Error{File: name, Msg: "no scenario in this file: it is empty"})
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	if len(errs) > maxErrors {
		more := len(errs) - maxErrors
		next := errs[maxErrors].Line
		errs = append(errs[:maxErrors:maxErrors], &Error{File: name, Line: next, Msg: fmt.Sprintf("and %d more mistakes from here on", more)})
	}
	return out, errs
}

// maxErrors bounds the mistakes reported per file: past a few dozen the
// file is probably not a scenario file at all.
const maxErrors = 50

// syntaxError turns a yaml.v3 error ("yaml: line 3: ...") into an Error
// with the line pulled out.
func syntaxError(name string, err error, data []byte) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: name, Msg: "YAML: " + msg}
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil && line > 0 {
		_, msg, _ = strings.Cut(msg, ": ")
		if parserProblem(msg) {
			line++
		}
	} else if parserProblem(msg) {
		line = 1 // the parser's mark was 0, the first line: yaml.v3 then names none
	}
	if line > 0 {
		e.Line, e.Msg = line, "YAML: "+msg
		switch {
		case unquotedTemplate(data, line):
			e.Msg += ` (a value with a template in braces must be quoted, as in urls: ["http://gw/users/{id}"])`
		case strings.HasPrefix(msg, "did not find expected ',' or '}'"):
			e.Msg += " (a {...} mapping is not closed, or a value in it needs quotes)"
		case strings.HasPrefix(msg, "did not find expected ',' or ']'"):
			e.Msg += " (a [...] list is not closed, or a value in it needs quotes)"
		}
	}
	return e
}

// parserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. For a parser error yaml.v3 reports the mark's line as it is,
// counted from 0 (it adds 1 for scanner errors only), so an unclosed {
// on line 3 read "line 2". The two sets of messages do not overlap.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

func parserProblem(msg string) bool {
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// unquotedTemplate reports whether line n of data (1-based), or one next
// to it (the error's line is where the construct opened, the template may
// sit a line later), holds a template such as
// {id} outside quotes: inside [...] or {...} YAML reads the brace as the
// start of a mapping, and the error it gives does not say so.
func unquotedTemplate(data []byte, n int) bool {
	lines := strings.Split(string(data), "\n")
	for _, i := range []int{n - 2, n - 1, n} {
		if i < 0 || i >= len(lines) {
			continue
		}
		quoted := byte(0)
		l := lines[i]
		for j := 0; j < len(l); j++ {
			switch c := l[j]; {
			case quoted != 0:
				if c == quoted {
					quoted = 0
				}
			case c == '"' || c == '\'':
				quoted = c
			case c == '#':
				j = len(l)
			case c == '{' && strings.HasPrefix(l[j:], "{id}"), c == '{' && strings.HasPrefix(l[j:], "{{"):
				return true
			}
		}
	}
	return false
}

// checkUnique reports a name used by more than one scenario.
func checkUnique(scs []*Scenario) Errors {
	var errs Errors
	first := map[string]*Scenario{}
	for _, sc := range scs {
		if f, dup := first[sc.Name]; dup {
			errs = append(errs, &Error{File: sc.File, Line: sc.Line, Path: "name",
				Msg: fmt.Sprintf("scenario name %q is already used at %s:%d; names must be unique in a suite", sc.Name, f.File, f.Line)})
			continue
		}
		first[sc.Name] = sc
	}
	return errs
}

// Names returns the scenarios' names in order.
func Names(scs []*Scenario) []string {
	out := make([]string, len(scs))
	for i, sc := range scs {
		out[i] = sc.Name
	}
	return slices.Clip(out)
}

// safeDecode turns a panic inside the YAML parser into an error: a scenario
// file is user input, and a bad one must be a message, not a crash.
func safeDecode(dec *yaml.Decoder, doc *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", p)
		}
	}()
	return dec.Decode(doc)
}
