package redisconn

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis logs retries and Sentinel lookups straight to os.Stderr by
// default. A core package must not write to the process's streams, and
// those lines would break rlctl's one-line errors, so the log is discarded
// until the CLI routes it somewhere with SetLogOutput.
var sink = &logSink{}

func init() { redis.SetLogger(sink) }

type logSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logSink) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return
	}
	line := strings.TrimRight(Redact(fmt.Sprintf(format, v...)), "\n")
	fmt.Fprintf(l.w, "redis: %s\n", line)
}

// SetLogOutput sends go-redis's own log lines (dial retries, Sentinel
// lookups), redacted, to w; nil discards them, the default.
func SetLogOutput(w io.Writer) {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	sink.w = w
}
