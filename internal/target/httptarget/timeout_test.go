package httptarget

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/decision"
	"github.com/rlctl/rlctl/internal/traffic"
)

// A request slower than the timeout is an unanswered error naming the
// scenario field and its value, over the fast client (http://) and
// net/http (https://); one cut short by the run's own end does not blame
// the timeout.
func TestTimeoutNamesItsField(t *testing.T) {
	t.Parallel()
	// The gateway never answers in time. It does not answer once the
	// client has gone either (the abort closes the connection unanswered):
	// net/http's client, cancelling a request over TLS, may still read an
	// answer written the moment the server saw it go.
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			panic(http.ErrAbortHandler)
		case <-time.After(2 * time.Second):
		}
	})
	plain := httptest.NewServer(slow)
	defer plain.Close()
	secure := httptest.NewTLSServer(slow)
	defer secure.Close()
	for _, tt := range []struct {
		name string
		o    Options
	}{
		{"fasthttp", Options{URLs: []string{plain.URL}, Timeout: 80 * time.Millisecond}},
		{"net/http", Options{URLs: []string{secure.URL}, Timeout: 80 * time.Millisecond, TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tgt, err := New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			resp := tgt.Do(context.Background(), traffic.Request{ID: "u"})
			if resp.Outcome != decision.Error || resp.By != decision.ByUnanswered || resp.Err == nil {
				t.Fatalf("got %+v, want an unanswered error", resp)
			}
			if msg := resp.Err.Error(); !strings.Contains(msg, "no answer after target.request_timeout 80ms") {
				t.Errorf("error %q does not name the timeout", msg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			resp = tgt.Do(ctx, traffic.Request{ID: "u"})
			if resp.Err == nil || strings.Contains(resp.Err.Error(), TimeoutField) {
				t.Errorf("a request the run cut short: %v", resp.Err)
			}
		})
	}
}
