package redisconn

import (
	"github.com/rlctl/rlctl/internal/redact"

	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Mode is how a deployment is addressed: one server, a Sentinel-managed
// primary, or a Cluster.
type Mode string

// The modes a URL can name.
const (
	ModeStandalone Mode = "standalone"
	ModeSentinel   Mode = "sentinel"
	ModeCluster    Mode = "cluster"
)

// Target is a parsed Redis URL. Every form rlctl accepts:
//
//	redis://[user[:pass]@]host[:port][/db][?opts]        one server (port 6379 by default)
//	rediss://...                                          the same over TLS
//	unix://[user[:pass]@]/path/to/redis.sock[?db=N&...]   a Unix socket
//	redis+sentinel://[user[:pass]@]h1:26379,h2:26379/mymaster[/db][?opts]
//	rediss+sentinel://...                                 Sentinel, TLS to the data nodes
//	redis+cluster://[user[:pass]@]h1:7000,h2:7001[?opts]  Cluster seed nodes
//	rediss+cluster://...                                  Cluster over TLS
//
// user and pass are percent-encoded. The user and password in a Sentinel
// URL are those of the data nodes; the Sentinels' own credentials go in the
// sentinel_username and sentinel_password options. Options (all optional):
// db (unix only; elsewhere the path holds it), timeout (a Go duration that
// overrides --timeout), pool_size, client_name, protocol (2 or 3),
// sentinel_username, sentinel_password. Any other option is an error, so a
// typo never silently falls back to a default.
type Target struct {
	Mode    Mode
	TLS     bool
	Network string   // "tcp" or "unix"
	Addrs   []string // host:port, or the socket path for unix
	// MasterName is the Sentinel master name (sentinel mode only).
	MasterName string
	Username   string
	Password   string
	// PasswordSet records that the URL carried a password, even an empty
	// one, so REDISCLI_AUTH does not override it.
	PasswordSet      bool
	DB               int
	Timeout          time.Duration // 0: use Options.Timeout
	PoolSize         int
	ClientName       string
	Protocol         int
	SentinelUsername string
	SentinelPassword string
}

var knownOptions = map[string]bool{
	"db": true, "timeout": true, "pool_size": true, "client_name": true, "protocol": true,
	"sentinel_username": true, "sentinel_password": true,
}

// ParseURL parses one of the URL forms described at Target. Errors never
// contain the password.
func ParseURL(raw string) (*Target, error) {
	t, err := parseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %w", Redact(raw), err)
	}
	return t, nil
}

func parseURL(raw string) (*Target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("want scheme://..., e.g. redis://127.0.0.1:6379")
	}
	t := &Target{Network: "tcp"}
	switch strings.ToLower(scheme) {
	case "redis":
		t.Mode = ModeStandalone
	case "rediss":
		t.Mode, t.TLS = ModeStandalone, true
	case "unix":
		t.Mode, t.Network = ModeStandalone, "unix"
	case "redis+sentinel":
		t.Mode = ModeSentinel
	case "rediss+sentinel":
		t.Mode, t.TLS = ModeSentinel, true
	case "redis+cluster":
		t.Mode = ModeCluster
	case "rediss+cluster":
		t.Mode, t.TLS = ModeCluster, true
	default:
		return nil, fmt.Errorf("unknown scheme %q (want redis, rediss, unix, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster)", scheme)
	}

	// The user info ends at the last '@' in the whole URL (Redact uses the
	// same rule), so a password holding an unescaped '@', '/', '?' or '#'
	// still parses and never leaks into the host, path or query. An '@'
	// inside an option value must therefore be written %40.
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		if err := t.setUserInfo(rest[:i]); err != nil {
			return nil, err
		}
		rest = rest[i+1:]
	}
	var query string
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 || strings.Contains(query, "#") {
		return nil, errors.New("a fragment (#...) is not allowed")
	}

	hosts, path, _ := strings.Cut(rest, "/")
	if t.Network == "unix" {
		if hosts != "" {
			return nil, errors.New("unix://: want unix:///path/to/redis.sock (no host)")
		}
		if path == "" {
			return nil, errors.New("unix://: missing socket path")
		}
		p, err := url.PathUnescape("/" + path)
		if err != nil {
			return nil, fmt.Errorf("socket path: %w", err)
		}
		t.Addrs = []string{p}
	} else {
		if err := t.setHosts(hosts); err != nil {
			return nil, err
		}
		if err := t.setPath(path); err != nil {
			return nil, err
		}
	}
	if err := t.setQuery(query); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Target) setUserInfo(info string) error {
	user, pass, hasPass := strings.Cut(info, ":")
	var err error
	if t.Username, err = url.PathUnescape(user); err != nil {
		return errors.New("invalid percent-encoding in user name")
	}
	if hasPass {
		if t.Password, err = url.PathUnescape(pass); err != nil {
			// Do not quote the password: the message would carry it.
			return errors.New("invalid percent-encoding in password")
		}
		t.PasswordSet = true
	}
	return nil
}

func (t *Target) setHosts(hosts string) error {
	if hosts == "" {
		return errors.New("missing host")
	}
	defPort := "6379"
	if t.Mode == ModeSentinel {
		defPort = "26379"
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return fmt.Errorf("empty address in host list %q", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: the whole thing is a host, maybe a bracketed IPv6
			// literal, whose brackets must then be closed.
			host, port = h, defPort
			if v6, ok := strings.CutPrefix(h, "["); ok {
				if host, ok = strings.CutSuffix(v6, "]"); !ok {
					return fmt.Errorf("invalid address %q: unclosed [", h)
				}
			}
			if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && !strings.HasPrefix(h, "[")) {
				return fmt.Errorf("invalid address %q", h)
			}
		}
		if strings.HasPrefix(h, "[") && net.ParseIP(host) == nil {
			return fmt.Errorf("invalid address %q: not an IPv6 address in brackets", h)
		}
		if host == "" {
			return fmt.Errorf("address %q: missing host", h)
		}
		if strings.ContainsAny(host, " /\\%") {
			return fmt.Errorf("address %q: invalid host", h)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("address %q: port must be 1-65535", h)
		}
		t.Addrs = append(t.Addrs, net.JoinHostPort(host, strconv.Itoa(n)))
	}
	if t.Mode == ModeStandalone && len(t.Addrs) > 1 {
		return errors.New("several hosts: use redis+cluster:// or redis+sentinel://")
	}
	return nil
}

func (t *Target) setPath(path string) error {
	parts := []string{}
	if path != "" {
		parts = strings.Split(path, "/")
	}
	if t.Mode == ModeSentinel {
		if len(parts) == 0 || parts[0] == "" {
			return errors.New("redis+sentinel://: missing master name, e.g. redis+sentinel://h1:26379,h2:26379/mymaster")
		}
		name, err := url.PathUnescape(parts[0])
		if err != nil {
			return fmt.Errorf("master name: %w", err)
		}
		t.MasterName = name
		parts = parts[1:]
	}
	if len(parts) > 1 || (len(parts) == 1 && parts[0] == "" && t.Mode == ModeSentinel) {
		return fmt.Errorf("unexpected path /%s", path)
	}
	if len(parts) == 1 && parts[0] != "" {
		if t.Mode == ModeCluster {
			return errors.New("redis+cluster://: a Cluster has only database 0; remove the path")
		}
		return t.setDB(parts[0])
	}
	return nil
}

func (t *Target) setDB(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("database %q: want a number >= 0", s)
	}
	t.DB = n
	return nil
}

func (t *Target) setQuery(query string) error {
	if query == "" {
		return nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return errors.New("invalid query string")
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownOptions[k] {
			return fmt.Errorf("unknown option %q (known: client_name, db, pool_size, protocol, sentinel_password, sentinel_username, timeout)", k)
		}
		if len(q[k]) != 1 {
			return fmt.Errorf("option %q given more than once", k)
		}
		v := q[k][0]
		switch k {
		case "db":
			if t.Network != "unix" {
				return errors.New("option db: put the database in the path (redis://host/2)")
			}
			if err := t.setDB(v); err != nil {
				return err
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("option timeout=%q: want a positive Go duration like 500ms", v)
			}
			t.Timeout = d
		case "pool_size":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("option pool_size=%q: want a number >= 1", v)
			}
			t.PoolSize = n
		case "client_name":
			t.ClientName = v
		case "protocol":
			if v != "2" && v != "3" {
				return fmt.Errorf("option protocol=%q: want 2 or 3", v)
			}
			t.Protocol, _ = strconv.Atoi(v)
		case "sentinel_username", "sentinel_password":
			if t.Mode != ModeSentinel {
				return fmt.Errorf("option %s only applies to redis+sentinel://", k)
			}
			if k == "sentinel_username" {
				t.SentinelUsername = v
			} else {
				t.SentinelPassword = v
			}
		}
	}
	return nil
}

// redactedPassword stands in for every password rlctl prints.
const redactedPassword = redact.Mask

// Redact returns s with every password it carries replaced by "xxxxx": the
// password in a URL's user info (in any scheme, with one or many hosts) and
// the values of secret options such as sentinel_password (see
// redact.URL). Strings without credentials come back unchanged. It is the
// one function every Redis URL goes through before it reaches output,
// logs, errors or reports.
func Redact(s string) string {
	// A Redis URL's user info ends at the last '@' of the whole URL (see
	// parseURL), query included; redact.URL, made for http URLs, stops at
	// the query. Hide such a password first.
	head, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme {
		rest = s
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		if user, _, hasPass := strings.Cut(rest[:i], ":"); hasPass {
			rest = user + ":" + redactedPassword + rest[i:]
		}
	}
	s = rest
	if hasScheme {
		s = head + "://" + rest
	}
	return redact.URL(s)
}

// URL formats t back into a URL with the password redacted.
func (t *Target) URL() string {
	scheme := map[Mode]string{ModeStandalone: "redis", ModeSentinel: "redis+sentinel", ModeCluster: "redis+cluster"}[t.Mode]
	if t.Network == "unix" {
		scheme = "unix"
	} else if t.TLS {
		scheme = strings.Replace(scheme, "redis", "rediss", 1)
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if t.Username != "" || t.PasswordSet {
		b.WriteString(escapeUserInfo(t.Username))
		if t.PasswordSet {
			b.WriteString(":" + redactedPassword)
		}
		b.WriteString("@")
	}
	if t.Network == "unix" {
		b.WriteString(t.Addrs[0])
	} else {
		b.WriteString(strings.Join(t.Addrs, ","))
		if t.Mode == ModeSentinel {
			b.WriteString("/" + url.PathEscape(t.MasterName))
		}
		if t.DB != 0 {
			fmt.Fprintf(&b, "/%d", t.DB)
		}
	}
	var q []string
	if t.Network == "unix" && t.DB != 0 {
		q = append(q, "db="+strconv.Itoa(t.DB))
	}
	if t.SentinelPassword != "" {
		q = append(q, "sentinel_password="+redactedPassword)
	}
	if len(q) > 0 {
		b.WriteString("?" + strings.Join(q, "&"))
	}
	return b.String()
}

// escapeUserInfo percent-encodes a user name or password so that ':', '@',
// '/', '?' and '#' cannot be mistaken for URL structure.
func escapeUserInfo(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}
