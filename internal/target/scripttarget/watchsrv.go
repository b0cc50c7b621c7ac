package scripttarget

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/rlctl/rlctl/internal/redisconn"
)

// watchClient is a client of a watch server: RESP2, no retries (a call run
// twice would be watched twice), and the call's context bounding its reads.
func watchClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ContextTimeoutEnabled: true, DialTimeout: 2 * time.Second})
}

// monitored is a redis-server rlctl spawned, watched through MONITOR.
type monitored struct {
	d       *redisconn.Deployment
	c       *redis.Client
	mon     net.Conn
	br      *bufio.Reader
	version string
	markers int
}

func startMonitored(ctx context.Context) (*monitored, error) {
	d, err := redisconn.Spawn(ctx, redisconn.SpawnOptions{})
	if err != nil {
		return nil, err
	}
	m := &monitored{d: d, c: watchClient(d.Servers[0].Addr)}
	if err := m.start(ctx); err != nil {
		m.close(false)
		return nil, err
	}
	return m, nil
}

func (m *monitored) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := m.c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	m.version = redisconn.InfoField(info, "redis_version")
	var dl net.Dialer
	if m.mon, err = dl.DialContext(ctx, "tcp", m.d.Servers[0].Addr); err != nil {
		return err
	}
	m.br = bufio.NewReader(m.mon)
	if _, err := m.mon.Write([]byte("MONITOR\r\n")); err != nil {
		return err
	}
	_ = m.mon.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := m.br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("MONITOR: %w", err)
	}
	if strings.TrimSpace(line) != "+OK" {
		return fmt.Errorf("MONITOR answered %q", strings.TrimSpace(line))
	}
	return nil
}

func (m *monitored) describe() string {
	if m.version == "" {
		return "a redis-server rlctl started"
	}
	return "a redis-server rlctl started (" + m.version + ")"
}

func (m *monitored) client() redis.UniversalClient { return m.c }

// call runs the script, then an ECHO of a marker on the same connection:
// MONITOR shows commands in the order the server runs them, so every
// command of the script comes before the marker.
func (m *monitored) call(ctx context.Context, s *redis.Script, keys []string, args []any) ([]observed, error) {
	err := s.Run(ctx, m.c, keys, args...).Err()
	if timedOut(err) {
		// The server is still in the script: take what it showed so far.
		ran, _ := m.readUntil("", time.Now().Add(200*time.Millisecond))
		return ran, err
	}
	m.markers++
	marker := "rlctl-watch-" + strconv.Itoa(m.markers)
	if echoErr := m.c.Echo(ctx, marker).Err(); echoErr != nil {
		return nil, echoErr
	}
	ran, readErr := m.readUntil(marker, time.Now().Add(5*time.Second))
	if readErr != nil {
		return ran, fmt.Errorf("MONITOR: %w", readErr)
	}
	return ran, err
}

// readUntil reads MONITOR lines until the client's ECHO of marker (or,
// with no marker, until deadline) and returns the commands scripts ran.
func (m *monitored) readUntil(marker string, deadline time.Time) ([]observed, error) {
	_ = m.mon.SetReadDeadline(deadline)
	var out []observed
	for {
		line, err := m.br.ReadString('\n')
		if err != nil {
			return out, err
		}
		db, source, args, ok := parseMonitorLine(strings.TrimRight(line, "\r\n"))
		if !ok {
			continue
		}
		if source == "lua" {
			out = append(out, observed{args: args, db: db})
			continue
		}
		if marker != "" && len(args) == 2 && strings.EqualFold(args[0], "echo") && args[1] == marker {
			return out, nil
		}
	}
}

// parseMonitorLine reads one MONITOR line:
//
//	+1700000000.065240 [0 lua] "set" "a\"b\n" "1"
//
// giving the database, the source ("lua" for a script, else the client's
// address) and the arguments, unquoted.
func parseMonitorLine(line string) (db int, source string, args []string, ok bool) {
	line = strings.TrimPrefix(line, "+")
	open := strings.IndexByte(line, '[')
	end := strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return 0, "", nil, false
	}
	dbText, source, found := strings.Cut(line[open+1:end], " ")
	if !found {
		return 0, "", nil, false
	}
	db, err := strconv.Atoi(dbText)
	if err != nil {
		return 0, "", nil, false
	}
	args, ok = unquoteArgs(line[end+1:])
	return db, source, args, ok
}

// unquoteArgs reads the space-separated, double-quoted arguments MONITOR
// writes (escaped as Redis's sdscatrepr does: \\ \" \n \r \t \a \b \xHH).
func unquoteArgs(s string) ([]string, bool) {
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '"' {
			return nil, false
		}
		var b strings.Builder
		i++
		for {
			if i >= len(s) {
				return nil, false
			}
			c := s[i]
			if c == '"' {
				i++
				break
			}
			if c != '\\' {
				b.WriteByte(c)
				i++
				continue
			}
			if i+1 >= len(s) {
				return nil, false
			}
			switch e := s[i+1]; e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+3 >= len(s) {
					return nil, false
				}
				v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
				if err != nil {
					return nil, false
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(e)
			}
			i += 2
		}
		out = append(out, b.String())
	}
	return out, true
}

// info asks COMMAND INFO.
func (m *monitored) info(ctx context.Context, name string) commandInfo {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := m.c.Do(ctx, "COMMAND", "INFO", name).Slice()
	if err != nil || len(res) != 1 {
		return commandInfo{}
	}
	return parseCommandInfo(res[0])
}

// parseCommandInfo reads one entry of COMMAND or COMMAND INFO: name,
// arity, flags, first, last and step key positions, then (Redis 6 and
// later) ACL categories, and (Redis 7) tips, key specs and subcommands.
func parseCommandInfo(v any) commandInfo {
	e, ok := v.([]any)
	if !ok || len(e) < 6 {
		return commandInfo{}
	}
	info := commandInfo{known: true, flags: set(e[2]), categories: map[string]bool{}}
	info.first, info.last, info.step = asInt(e[3]), asInt(e[4]), asInt(e[5])
	if len(e) > 6 {
		info.categories = set(e[6])
	}
	if len(e) > 9 {
		subs, _ := e[9].([]any)
		info.sub = len(subs) > 0
	}
	info.movable = info.flags["movablekeys"]
	info.noKeys = info.first == 0 && !info.movable && !info.sub
	return info
}

func set(v any) map[string]bool {
	out := map[string]bool{}
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out[strings.ToLower(s)] = true
		}
	}
	return out
}

func asInt(v any) int {
	n, _ := v.(int64)
	return int(n)
}

// keysOf asks the server: COMMAND GETKEYSANDFLAGS (Redis 7) gives each
// key with what the command does to it; before 7, COMMAND GETKEYS gives
// the keys and the command's own flags say whether it writes.
func (m *monitored) keysOf(ctx context.Context, o observed, info commandInfo) ([]keyUse, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	args := make([]any, 0, len(o.args)+2)
	args = append(args, "COMMAND", "GETKEYSANDFLAGS")
	for _, a := range o.args {
		args = append(args, a)
	}
	res, err := m.c.Do(ctx, args...).Slice()
	if err == nil {
		var uses []keyUse
		for _, e := range res {
			pair, _ := e.([]any)
			if len(pair) != 2 {
				continue
			}
			k, _ := pair[0].(string)
			fl := set(pair[1])
			uses = append(uses, keyUse{key: k, write: fl["rw"] || fl["ow"] || fl["rm"], erase: fl["rm"] || fl["delete"]})
		}
		return uses, true
	}
	args[1] = "GETKEYS"
	keys, err := m.c.Do(ctx, args...).StringSlice()
	if err != nil {
		return guessKeys(o, info), false
	}
	var uses []keyUse
	for _, k := range keys {
		uses = append(uses, keyUse{key: k, write: info.flags["write"], erase: erases(o.args[0])})
	}
	return uses, true
}

func (m *monitored) close(bool) {
	if m.mon != nil {
		m.mon.Close()
	}
	m.c.Close()
	// The process is rlctl's own: killed, a script still running in it
	// goes with it.
	m.d.Close()
}

// erases reports whether a command deletes the keys it names.
func erases(name string) bool {
	switch strings.ToLower(name) {
	case "del", "unlink", "getdel":
		return true
	}
	return false
}

// guessKeys takes every argument of a command that is not a number for a
// key it writes (unless the command is known to only read): what a watch
// does with a command whose key positions it does not know, erring
// towards refusing.
func guessKeys(o observed, info commandInfo) []keyUse {
	write := !info.known || !info.flags["readonly"]
	var uses []keyUse
	for _, a := range o.args[1:] {
		if _, err := strconv.ParseFloat(a, 64); err == nil {
			continue
		}
		uses = append(uses, keyUse{key: a, write: write, erase: write && erases(o.args[0])})
	}
	return uses
}

// hooked is the embedded Redis (miniredis) watched through its command
// hook, for a user without redis-server.
type hooked struct {
	m     *miniredis.Miniredis
	c     *redis.Client
	table map[string]commandInfo

	mu      sync.Mutex
	clients map[*server.Peer]bool
	ran     []observed
}

func startHooked() (*hooked, error) {
	m := miniredis.NewMiniRedis()
	m.SetTime(time.Now())
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, err
	}
	h := &hooked{m: m, c: watchClient(m.Addr()), clients: map[*server.Peer]bool{}, table: map[string]commandInfo{}}
	m.Server().SetPreHook(h.hook)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// miniredis answers COMMAND with a fixed table (Redis 5's): key
	// positions and flags, no categories.
	res, err := h.c.Do(ctx, "COMMAND").Slice()
	if err != nil {
		h.close(false)
		return nil, fmt.Errorf("COMMAND: %w", err)
	}
	for _, e := range res {
		if info := parseCommandInfo(e); info.known {
			name, _ := e.([]any)[0].(string)
			h.table[strings.ToLower(name)] = info
		}
	}
	return h, nil
}

// hook records the commands a script calls. A client connection's peer
// has no context before its first command; each redis.call of a script
// gets a fresh peer carrying its caller's.
func (h *hooked) hook(c *server.Peer, cmd string, args ...string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[c] {
		return false
	}
	if c.Ctx == nil {
		h.clients[c] = true
		c.OnDisconnect(func() {
			h.mu.Lock()
			delete(h.clients, c)
			h.mu.Unlock()
		})
		return false
	}
	h.ran = append(h.ran, observed{args: append([]string{strings.ToLower(cmd)}, args...), db: -1})
	return false
}

func (h *hooked) describe() string { return "the embedded Redis (no redis-server is installed)" }

func (h *hooked) client() redis.UniversalClient { return h.c }

func (h *hooked) call(ctx context.Context, s *redis.Script, keys []string, args []any) ([]observed, error) {
	err := s.Run(ctx, h.c, keys, args...).Err()
	h.mu.Lock()
	defer h.mu.Unlock()
	ran := h.ran
	h.ran = nil
	return ran, err
}

func (h *hooked) info(_ context.Context, name string) commandInfo { return h.table[name] }

// keysOf reads the key positions of the command table; a command with
// several keys or movable ones is guessed (see guessKeys).
func (h *hooked) keysOf(_ context.Context, o observed, info commandInfo) ([]keyUse, bool) {
	if !info.known || info.movable {
		return guessKeys(o, info), false
	}
	last := info.last
	if last < 0 {
		last += len(o.args)
	}
	step := max(info.step, 1)
	var uses []keyUse
	for i := info.first; i <= last && i < len(o.args); i += step {
		uses = append(uses, keyUse{key: o.args[i], write: info.flags["write"], erase: erases(o.args[0])})
	}
	// One key is exact; with several, the table does not say which the
	// command writes (SINTERSTORE writes only the first).
	return uses, len(uses) <= 1 || !info.flags["write"]
}

func (h *hooked) close(stuck bool) {
	h.c.Close()
	if stuck {
		// A script still running holds miniredis's lock for good: closing
		// would wait on it. It spins until rlctl exits.
		return
	}
	h.m.Close()
}
