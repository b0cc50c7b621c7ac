package redisconn

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestLogOutputIsRedacted: go-redis log lines, once routed somewhere, lose
// their passwords. (That they are silent by default is asserted end to end:
// the ping scripts require a one-line stderr.)
func TestLogOutputIsRedacted(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	SetLogOutput(&buf)
	defer SetLogOutput(nil)
	sink.Printf(ctx, "redis: reconnect to %s failed", "redis://ops:hunter2@10.0.0.1:6379")
	got := buf.String()
	if !strings.Contains(got, "redis://ops:xxxxx@10.0.0.1:6379") || strings.Contains(got, "hunter2") {
		t.Errorf("log line %q: want the URL redacted", got)
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("log line %q: want exactly one line", got)
	}
}
