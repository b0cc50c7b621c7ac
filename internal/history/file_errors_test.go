package history

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileErrorsQuoteNoContent: a history path that leads to another file
// (a link to /etc/shadow in a run directory) gives an error naming the
// path and the format wanted, never a byte of what the file holds; nor
// does a history whose meta is not rlctl's JSON.
func TestFileErrorsQuoteNoContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := "root:*:20000:0:99999:7:::\ndaemon:s3cr3t-hash:20000::::::\n"
	shadow := filepath.Join(dir, "shadow")
	if err := os.WriteFile(shadow, []byte(secret+strings.Repeat("x", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "run-1.rlh")
	if err := os.Symlink(shadow, link); err != nil {
		t.Fatal(err)
	}
	// A file with the magic and version but a meta that is not JSON: its
	// text must not be quoted either.
	meta := "s3cr3t-meta-text"
	b := []byte(fileMagic)
	b = binary.LittleEndian.AppendUint16(b, FileVersion)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(meta)))
	b = append(b, meta...)
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = append(b, make([]byte, 64)...)
	badMeta := filepath.Join(dir, "run-2.rlh")
	if err := os.WriteFile(badMeta, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, want string
		open             func(string) (*History, error)
	}{
		{"ReadFile of a link", link, `does not start with "RLCTLHST" (want a history rlctl verify saved, format version 1)`, ReadFile},
		{"OpenFile of a link, read whole", link, `does not start with "RLCTLHST"`, func(p string) (*History, error) { return OpenFile(p, 1<<20) }},
		{"OpenFile of a link, left on disk", link, `does not start with "RLCTLHST"`, func(p string) (*History, error) { return OpenFile(p, 0) }},
		{"ReadFile of a bad meta", badMeta, "meta: not valid JSON at byte 1", ReadFile},
		{"OpenFile of a bad meta, left on disk", badMeta, "meta: not valid JSON at byte 1", func(p string) (*History, error) { return OpenFile(p, 0) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.open(tt.path)
			if err == nil {
				t.Fatal("opened")
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.path) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want the path %s and %q", msg, tt.path, tt.want)
			}
			rest := strings.ReplaceAll(msg, tt.path, "") // the temp dir may hold "root"
			for _, piece := range []string{"root", "s3cr3t", "daemon", ":*:", "xxxx", "'s'"} {
				if strings.Contains(rest, piece) {
					t.Errorf("error %q quotes the file's content (%q)", msg, piece)
				}
			}
		})
	}
}
