package httptarget

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/traffic"
)

// FuzzResponseFraming builds a response from fuzzed parts (status, one
// header, body and its framing); a real server on loopback sends it to
// the target's first request and a known 418 to every later one. The
// target must read the first one's status and hint header as written and
// consume exactly its bytes: the second request then reads the 418. A
// misread framing would hand the next request the wrong answer.
func FuzzResponseFraming(f *testing.F) {
	f.Add(429, "Retry-After", "3", []byte("slow down"), uint8(0))
	f.Add(200, "RateLimit-Remaining", "0", []byte{}, uint8(1))
	f.Add(503, "X-Other", "x", []byte("0123456789abcdef"), uint8(2))
	f.Add(103, "Link", "</a>", []byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte, mode uint8) {
		if status < 200 || status > 599 || status == 204 || status == 304 ||
			!validToken(name) || !validFieldValue(value) || len(body) > 4096 {
			return
		}
		lname := strings.ToLower(name)
		if lname == "content-length" || lname == "transfer-encoding" || lname == "connection" {
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "HTTP/1.1 %d X\r\n%s: %s\r\n", status, name, value)
		switch mode % 3 {
		case 0:
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
			b.Write(body)
		case 1:
			b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			for rest := body; len(rest) > 0; {
				n := min(len(rest), 7)
				fmt.Fprintf(&b, "%x\r\n", n)
				b.Write(rest[:n])
				b.WriteString("\r\n")
				rest = rest[n:]
			}
			b.WriteString("0\r\n\r\n")
		case 2:
			b.WriteString("Connection: close\r\n\r\n")
			b.Write(body)
		}
		tgt := scriptedTarget(t, b.Bytes(), mode%3 == 2)
		first := tgt.Do(context.Background(), traffic.Request{ID: "u"})
		if first.Status != status {
			t.Fatalf("status %d (%v), wrote %d: %q", first.Status, first.Err, status, b.String())
		}
		hinted := lname == "retry-after" || strings.HasPrefix(lname, "ratelimit") || strings.HasPrefix(lname, "x-ratelimit") || strings.HasPrefix(lname, "x-rate-limit")
		if hinted && lname == "retry-after" && status == 429 {
			if want, err := strconv.Atoi(strings.TrimSpace(value)); err == nil && want >= 0 && want < 1<<20 && first.RetryAfter != time.Duration(want)*time.Second {
				t.Fatalf("Retry-After %q read as %v", value, first.RetryAfter)
			}
		}
		if next := tgt.Do(context.Background(), traffic.Request{ID: "u"}); next.Status != http.StatusTeapot {
			t.Fatalf("the next response read as %d, %v: the first one's framing was misread", next.Status, next.Err)
		}
	})
}

// scriptedTarget is a target on a loopback server that answers the first
// request with first (closing the connection after it when closeAfter)
// and every later one with 418.
func scriptedTarget(t *testing.T, first []byte, closeAfter bool) traffic.Target {
	t.Helper()
	var answered atomic.Bool
	addr := scriptServer(t, func(int) ([]byte, bool) {
		if answered.CompareAndSwap(false, true) {
			return first, closeAfter
		}
		return []byte("HTTP/1.1 418 Teapot\r\nContent-Length: 0\r\n\r\n"), false
	})
	tgt, err := New(Options{URLs: []string{"http://" + addr}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	return tgt
}

// FuzzResponseBytes has a server send arbitrary bytes and close: the
// target returns an error or a status of three digits, within its
// timeout, and never panics.
func FuzzResponseBytes(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 103 Early\r\n\r\nHTTP/1.1 429 X\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tgt := scriptedTarget(t, in, true)
		r := tgt.Do(context.Background(), traffic.Request{ID: "u"})
		if r.Err == nil && (r.Status < 100 || r.Status > 999) {
			t.Fatalf("status %d from %q", r.Status, in)
		}
	})
}

// validFieldValue is RFC 9110's field-value: visible characters, spaces
// and tabs (a control character makes the answer malformed).
func validFieldValue(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// FuzzIdentityURL: a gateway URL the parser accepts renders, for any
// identity, a URL that parses, with the identity back where {id} stood,
// in the path or the query, exactly as given once decoded.
func FuzzIdentityURL(f *testing.F) {
	f.Add("http://gw.example/v1/users/{id}/orders", "user-1")
	f.Add("https://gw.example/a?key={id}&x=1", "a b&c=d")
	f.Add("http://gw.example/{id}?id={id}", "../..?#/")
	f.Fuzz(func(t *testing.T, raw, id string) {
		if err := CheckURL(raw); err != nil || !CarriesID(raw) {
			return
		}
		u, err := parseIDURL(raw)
		if err != nil {
			t.Fatalf("CheckURL accepted %q, parseIDURL did not: %v", raw, err)
		}
		rendered := string(newIDTemplate(strings.ReplaceAll(raw, "{id}", idMark)).appendTo(nil, id))
		got, err := url.Parse(rendered)
		if err != nil {
			t.Fatalf("%q with %q rendered %q, which does not parse: %v", raw, id, rendered, err)
		}
		if got.Host != u.Host || got.Scheme != u.Scheme {
			t.Fatalf("%q with %q moved the host: %q", raw, id, rendered)
		}
		// Decoded, the rendered path and query are the template's with the
		// identity where {id} stood, whatever the identity holds.
		if want := strings.ReplaceAll(u.Path, idMark, id); got.Path != want {
			t.Fatalf("%q with %q: path %q, want %q", raw, id, got.Path, want)
		}
		tq, err1 := url.QueryUnescape(u.RawQuery)
		gq, err2 := url.QueryUnescape(got.RawQuery)
		if err1 == nil && err2 == nil && gq != strings.ReplaceAll(tq, idMark, id) {
			t.Fatalf("%q with %q: query %q decodes to %q, want %q", raw, id, got.RawQuery, gq, strings.ReplaceAll(tq, idMark, id))
		}
	})
}
