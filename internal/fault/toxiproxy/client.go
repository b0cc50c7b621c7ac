package toxiproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/exitcode"
)

// CleanupTimeout bounds Cleanup: every toxic rlctl added is removed within
// it, or Cleanup says which were not.
const CleanupTimeout = 5 * time.Second

// callTimeout bounds one API call, so a hung Toxiproxy fails the call
// instead of the run.
const callTimeout = 3 * time.Second

// Proxy is what the API says of a proxy.
type Proxy struct {
	Name     string  `json:"name"`
	Listen   string  `json:"listen"`
	Upstream string  `json:"upstream"`
	Enabled  bool    `json:"enabled"`
	Toxics   []Toxic `json:"toxics"`
}

// Toxic is one toxic as the API takes and shows it.
type Toxic struct {
	Name string `json:"name"`
	// Type is the toxic's kind: "latency", "reset_peer", "timeout" ...
	Type string `json:"type"`
	// Stream is "downstream" (Redis to the gateways, the default) or
	// "upstream" (the gateways to Redis).
	Stream string `json:"stream"`
	// Toxicity is the share of connections it acts on; the API treats 0
	// as 1.
	Toxicity float32 `json:"toxicity"`
	// Attributes are the kind's own settings, in milliseconds for times
	// ({"latency": 90, "jitter": 10}).
	Attributes map[string]any `json:"attributes"`
}

// Undo takes back one change a Client made. It may be called more than
// once; calls after the first do nothing.
type Undo func(ctx context.Context) error

// Client changes one named proxy of one Toxiproxy server and remembers
// what it changed. It is safe for concurrent use.
type Client struct {
	api   *url.URL
	proxy string
	http  *http.Client
	// tag starts the name of every toxic this client adds, so none can
	// be mistaken for another's.
	tag string

	mu  sync.Mutex
	seq int
	// added are the toxics this client created (or may have: a create
	// whose answer was lost counts), by name.
	added []string
	// disabled is set while the proxy is down because of this client.
	disabled bool
}

// New returns a client of the proxy named proxy on the Toxiproxy API at
// api (http://host:port). It does not contact the server; Check does.
func New(api, proxy string) (*Client, error) {
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "toxiproxy api %q: want an http:// URL such as http://127.0.0.1:8474", api)
	}
	if proxy == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "toxiproxy: no proxy named (proxy: the name the gateways' Redis goes through)")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{api: u, proxy: proxy, http: &http.Client{Timeout: callTimeout},
		tag: "rlctl-" + hex.EncodeToString(b)}, nil
}

// ProxyName is the proxy the client acts on.
func (c *Client) ProxyName() string { return c.proxy }

// Check reads the proxy, so a run learns before any traffic that the API
// answers and has the proxy.
func (c *Client) Check(ctx context.Context) (Proxy, error) {
	var p Proxy
	err := c.call(ctx, http.MethodGet, c.proxyPath(), nil, &p)
	return p, err
}

// Added lists the names of the toxics the client added and has not yet
// removed.
func (c *Client) Added() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.added)
}

// Down disables the proxy: Toxiproxy closes its connections and refuses
// new ones until it is enabled again, which the Undo (or Cleanup) does. A
// proxy that was already disabled is left alone, and so is its state
// afterwards.
func (c *Client) Down(ctx context.Context) (Undo, error) {
	p, err := c.Check(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Enabled {
		return func(context.Context) error { return nil }, nil
	}
	c.mu.Lock()
	// Set before the call: a disable whose answer is lost may still have
	// happened, and enabling an enabled proxy is harmless.
	c.disabled = true
	c.mu.Unlock()
	if err := c.setEnabled(ctx, false); err != nil {
		return nil, fmt.Errorf("redis-down: %w", err)
	}
	return c.enable, nil
}

func (c *Client) enable(ctx context.Context) error {
	c.mu.Lock()
	was := c.disabled
	c.mu.Unlock()
	if !was {
		return nil
	}
	if err := c.setEnabled(ctx, true); err != nil {
		return fmt.Errorf("enable the proxy again: %w", err)
	}
	c.mu.Lock()
	c.disabled = false
	c.mu.Unlock()
	return nil
}

func (c *Client) setEnabled(ctx context.Context, on bool) error {
	return c.call(ctx, http.MethodPost, c.proxyPath(), map[string]bool{"enabled": on}, nil)
}

// Latency delays what Redis sends the gateways by latency, each chunk by
// up to jitter more or less (0 for none), until undone.
func (c *Client) Latency(ctx context.Context, latency, jitter time.Duration) (Undo, error) {
	if latency <= 0 || jitter < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "toxiproxy latency %s, jitter %s: want a positive latency and a jitter of 0 or more", latency, jitter)
	}
	return c.Add(ctx, Toxic{Type: "latency", Attributes: map[string]any{
		"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()}})
}

// ResetPeer resets the gateways' connections through the proxy (TCP RST)
// after they have been open for after (0: at once, and every new one),
// until undone.
func (c *Client) ResetPeer(ctx context.Context, after time.Duration) (Undo, error) {
	if after < 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "toxiproxy reset_peer after %s: want 0 or more", after)
	}
	return c.Add(ctx, Toxic{Type: "reset_peer", Attributes: map[string]any{"timeout": after.Milliseconds()}})
}

// Add creates t on the proxy under a name of the client's own (t.Name is
// ignored) and remembers it for Cleanup. Stream defaults to downstream
// and Toxicity to 1.
func (c *Client) Add(ctx context.Context, t Toxic) (Undo, error) {
	c.mu.Lock()
	c.seq++
	t.Name = c.tag + "-" + t.Type + "-" + strconv.Itoa(c.seq)
	// Remembered before the call: a create whose answer is lost may still
	// have happened, and removing a toxic that is not there is harmless.
	c.added = append(c.added, t.Name)
	c.mu.Unlock()
	if t.Stream == "" {
		t.Stream = "downstream"
	}
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	if err := c.call(ctx, http.MethodPost, c.proxyPath()+"/toxics", t, nil); err != nil {
		return nil, fmt.Errorf("add a %s toxic: %w", t.Type, err)
	}
	name := t.Name
	return func(ctx context.Context) error { return c.remove(ctx, name) }, nil
}

// remove deletes one toxic the client added; one already gone counts as
// removed.
func (c *Client) remove(ctx context.Context, name string) error {
	c.mu.Lock()
	mine := slices.Contains(c.added, name)
	c.mu.Unlock()
	if !mine {
		return nil
	}
	err := c.call(ctx, http.MethodDelete, c.proxyPath()+"/toxics/"+url.PathEscape(name), nil, nil)
	var ae *apiError
	if err != nil && !(errors.As(err, &ae) && ae.status == http.StatusNotFound && ae.toxicGone()) {
		return fmt.Errorf("remove toxic %s: %w", name, err)
	}
	c.mu.Lock()
	c.added = slices.DeleteFunc(c.added, func(n string) bool { return n == name })
	c.mu.Unlock()
	return nil
}

// Cleanup removes every toxic the client added and enables the proxy if
// the client disabled it, and nothing else. It runs on a context of its
// own bounded by CleanupTimeout, keeping ctx's values but not its
// cancellation, so it works after the run's context was cancelled.
func (c *Client) Cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	var errs []error
	for _, name := range c.Added() {
		if err := c.remove(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.enable(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("toxiproxy %s, proxy %s: clean up what rlctl changed: %w", c.api.Redacted(), c.proxy, err)
	}
	return nil
}

func (c *Client) proxyPath() string { return "/proxies/" + url.PathEscape(c.proxy) }

// apiError is an answer of the API other than success.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status) }

// toxicGone tells a 404 for the toxic from one for the proxy.
func (e *apiError) toxicGone() bool { return strings.Contains(e.msg, "toxic not found") }

// call sends one request and decodes the answer into out (when not nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := *c.api
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rlctl")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return err
		}
		return exitcode.With(fmt.Errorf("toxiproxy api %s unreachable: %w", c.api.Redacted(), err), exitcode.Unreachable)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return exitcode.With(fmt.Errorf("toxiproxy api %s: read the answer: %w", c.api.Redacted(), err), exitcode.Unreachable)
	}
	if resp.StatusCode >= 300 {
		ae := &apiError{status: resp.StatusCode, msg: strings.TrimSpace(string(data))}
		var j struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &j) == nil && j.Error != "" {
			ae.msg = j.Error
		}
		if resp.StatusCode == http.StatusNotFound && !ae.toxicGone() {
			return exitcode.With(fmt.Errorf("toxiproxy %s has no proxy %q%s: %w", c.api.Redacted(), c.proxy, c.knownProxies(ctx), ae), exitcode.Usage)
		}
		return fmt.Errorf("toxiproxy %s, proxy %s: %s %s: %w", c.api.Redacted(), c.proxy, method, path, ae)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("toxiproxy %s: read the answer to %s %s: %w", c.api.Redacted(), method, path, err)
		}
	}
	return nil
}

// knownProxies lists the server's proxies for an error message, or says
// nothing when it cannot.
func (c *Client) knownProxies(ctx context.Context) string {
	u := *c.api
	u.Path += "/proxies"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	req.Header.Set("User-Agent", "rlctl")
	resp, err := c.http.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var all map[string]json.RawMessage
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&all) != nil {
		return ""
	}
	if len(all) == 0 {
		return " (it has none)"
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (it has: " + strings.Join(names, ", ") + ")"
}
