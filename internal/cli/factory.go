package cli

import (
	"encoding/json"
	"io"
	"time"

	"github.com/rlctl/rlctl/internal/redisconn"
)

// IOStreams are a command's standard streams and whether each is a
// terminal. Data goes to Out; progress and status to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	InTTY  bool
	OutTTY bool
	ErrTTY bool
}

// Factory carries what commands need from the process, built lazily.
type Factory struct {
	IO *IOStreams
	// Getenv reads the process environment (tests pass their own).
	Getenv func(string) string
	// Now is the wall clock (tests may pin it).
	Now func() time.Time

	// Global flags, filled in by the root command.
	RedisURL      string
	Output        string // "table" or "json"
	NoProgress    bool
	Timeout       time.Duration
	TLSCA         string
	TLSCert       string
	TLSKey        string
	TLSSkipVerify bool
}

// redisURL returns the Redis URL to use: --redis, then RLCTL_REDIS_URL, then
// REDIS_URL, then def.
func (f *Factory) redisURL(def string) string {
	if f.RedisURL != "" {
		return f.RedisURL
	}
	for _, k := range []string{"RLCTL_REDIS_URL", "REDIS_URL"} {
		if v := f.Getenv(k); v != "" {
			return v
		}
	}
	return def
}

// RedisOptions are the global Redis settings as redisconn options; def is
// the URL used when none was given.
func (f *Factory) RedisOptions(def string) redisconn.Options {
	return redisconn.Options{
		URL:           f.redisURL(def),
		TLSCA:         f.TLSCA,
		TLSCert:       f.TLSCert,
		TLSKey:        f.TLSKey,
		TLSSkipVerify: f.TLSSkipVerify,
		Timeout:       f.Timeout,
		Getenv:        f.Getenv,
	}
}

// ShowProgress reports whether live progress bars may be drawn: only on a
// terminal, and not with --no-progress.
func (f *Factory) ShowProgress() bool { return f.IO.ErrTTY && !f.NoProgress }

// WriteJSON writes v to Out as indented JSON: the stable machine output of
// every command under -o json.
func (f *Factory) WriteJSON(v any) error {
	enc := json.NewEncoder(f.IO.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// JSON reports whether machine output was asked for.
func (f *Factory) JSON() bool { return f.Output == "json" }
