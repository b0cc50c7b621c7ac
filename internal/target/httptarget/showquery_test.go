package httptarget

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/traffic"
)

// Gateway names and request errors show no query value but those of
// ShowQuery and the parameters that carry the identity, over net/http
// (https://, whose errors quote the whole URL) and the fast client.
func TestShowQuery(t *testing.T) {
	t.Parallel()
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	})
	plain := httptest.NewServer(cut)
	defer plain.Close()
	secure := httptest.NewTLSServer(cut)
	defer secure.Close()
	for _, base := range []string{plain.URL, secure.URL} {
		tgt, err := New(Options{
			URLs:          []string{base + "/v1?sid=S3CRET&page=2&user={id}"},
			IdentityQuery: "api_key", ShowQuery: []string{"page"},
			TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer tgt.Close()
		if got, want := tgt.Gateways()[0], base+"/v1?sid=xxxxx&page=2&user={id}"; got != want {
			t.Errorf("gateway name %q, want %q", got, want)
		}
		resp := tgt.Do(context.Background(), traffic.Request{ID: "alice"})
		if resp.Err == nil {
			t.Fatalf("%s: no error from a gateway that cuts every answer", base)
		}
		msg := resp.Err.Error()
		if strings.Contains(msg, "S3CRET") || !strings.Contains(msg, "sid=xxxxx") || !strings.Contains(msg, "page=2") {
			t.Errorf("%s: error %q", base, msg)
		}
		if strings.HasPrefix(base, "https") && (!strings.Contains(msg, "user=alice") || !strings.Contains(msg, "api_key=alice")) {
			t.Errorf("%s: error %q hides the identity, the run's own name", base, msg)
		}
	}
}

func TestIdentityParams(t *testing.T) {
	t.Parallel()
	got := identityParams([]string{"http://gw/a?u={id}&x=1", "http://gw/b?v%5B%5D={id}#f", "http://gw/c"}, "api_key", []string{"page"})
	if want := []string{"page", "api_key", "u", "v[]"}; !slices.Equal(got, want) {
		t.Errorf("identityParams = %q, want %q", got, want)
	}
}
