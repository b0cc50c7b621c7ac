package httptarget

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// FuzzReadRawResponse builds a response from fuzzed parts (status, one
// header, body and its framing) followed by a second, known response on
// the same connection. The raw reader must read the first one's status
// and hint header as written and, when it says the connection can carry
// another, consume exactly its bytes: the second response then reads as
// itself. A misread framing would hand the next request the wrong answer.
func FuzzReadRawResponse(f *testing.F) {
	f.Add(429, "Retry-After", "3", []byte("slow down"), uint8(0))
	f.Add(200, "RateLimit-Remaining", "0", []byte{}, uint8(1))
	f.Add(503, "X-Other", "x", []byte("0123456789abcdef"), uint8(2))
	f.Add(103, "Link", "</a>", []byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte, mode uint8) {
		if status < 200 || status > 599 || status == 204 || status == 304 ||
			!validToken(name) || strings.ContainsAny(value, "\r\n") || len(body) > 4096 {
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
		b.WriteString("HTTP/1.1 418 Teapot\r\nContent-Length: 0\r\n\r\n")
		br := bufio.NewReader(&b)
		a, keep, err := readRawResponse(br, false)
		if err != nil {
			t.Fatalf("%q: %v", b.String(), err)
		}
		if a.status != status {
			t.Fatalf("status %d, wrote %d", a.status, status)
		}
		hinted := lname == "retry-after" || strings.HasPrefix(lname, "ratelimit") || strings.HasPrefix(lname, "x-ratelimit") || strings.HasPrefix(lname, "x-rate-limit")
		if got := a.hints.Get(name); hinted && got != strings.TrimSpace(value) {
			t.Fatalf("hint %s = %q, wrote %q", name, got, value)
		}
		if mode%3 == 2 {
			if keep {
				t.Fatal("Connection: close, yet kept")
			}
			return
		}
		if !keep {
			t.Fatalf("mode %d: connection not kept", mode%3)
		}
		next, _, err := readRawResponse(br, false)
		if err != nil || next.status != 418 {
			t.Fatalf("the next response read as %d, %v: the first one's framing was misread", next.status, err)
		}
	})
}

// FuzzReadRawResponseBytes feeds arbitrary bytes: an error or a status of
// three digits, never a panic, and never more than the bounded drain.
func FuzzReadRawResponseBytes(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 103 Early\r\n\r\nHTTP/1.1 429 X\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, _, err := readRawResponse(bufio.NewReader(bytes.NewReader(in)), false)
		if err == nil && (a.status < 0 || a.status > 999) {
			t.Fatalf("status %d from %q", a.status, in)
		}
	})
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
