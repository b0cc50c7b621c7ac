package hotpath

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// Script is a Lua script and its SHA1, for EVALSHA.
type Script struct {
	src, sha string
}

// NewScript computes src's SHA1 once.
func NewScript(src string) *Script {
	h := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(h[:])}
}

// maxArgs bounds Args: the designs pass at most six values.
const maxArgs = 8

// Args are a script's keys and arguments, each kept as the string Redis
// receives (and an integer also as itself, for go-redis). Keys must be
// added before the other arguments.
type Args struct {
	strs  [maxArgs]string
	ints  [maxArgs]int64
	isInt [maxArgs]bool
	n     int
	keys  int
}

// Key adds a key.
func (a *Args) Key(k string) {
	if a.keys != a.n {
		panic("hotpath: Args.Key after an argument")
	}
	a.String(k)
	a.keys++
}

// String adds a string argument.
func (a *Args) String(s string) {
	a.strs[a.n], a.isInt[a.n] = s, false
	a.n++
}

// Int adds an integer argument.
func (a *Args) Int(v int64) {
	a.strs[a.n], a.ints[a.n], a.isInt[a.n] = strconv.FormatInt(v, 10), v, true
	a.n++
}

// Add appends b's values (keys included) as plain arguments.
func (a *Args) Add(b *Args) {
	for i := 0; i < b.n; i++ {
		a.strs[a.n+i], a.ints[a.n+i], a.isInt[a.n+i] = b.strs[i], b.ints[i], b.isInt[i]
	}
	a.n += b.n
}

// Values returns the keys and the other arguments in the form go-redis
// takes them, for a caller that runs the same script through go-redis
// (on a Cluster).
func (a *Args) Values() (keys []string, args []any) {
	keys = append(keys, a.strs[:a.keys]...)
	for i := a.keys; i < a.n; i++ {
		if a.isInt[i] {
			args = append(args, a.ints[i])
		} else {
			args = append(args, a.strs[i])
		}
	}
	return keys, args
}

// strings returns the keys and the other arguments as Redis receives
// them.
func (a *Args) strings() (keys, args []string) {
	return a.strs[:a.keys], a.strs[a.keys:a.n]
}

// evalCmd is EVALSHA (EVAL when sha is false) of s with keys and args.
// It is built as an arbitrary command, keys among the arguments: a pool is
// one server, and rueidis's typed builder would hash every key for a
// Cluster slot nobody reads.
func evalCmd(c rueidis.Client, s *Script, sha bool, keys, args []string) rueidis.Completed {
	cmd, script := "EVALSHA", s.sha
	if !sha {
		cmd, script = "EVAL", s.src
	}
	return c.B().Arbitrary(cmd, script, strconv.Itoa(len(keys))).Args(keys...).Args(args...).Build()
}

// EvalInts runs s with a through EVALSHA (loading the script with EVAL
// when the server answers NOSCRIPT) and reads its reply, an array of
// integers, into dst[:0]. A server error reply is returned as Error.
func (p *Pool) EvalInts(ctx context.Context, s *Script, a *Args, dst []int64) ([]int64, error) {
	return p.EvalIntsUntil(ctx, time.Time{}, s, a, dst)
}

// EvalIntsUntil is EvalInts that also gives up at deadline (zero: none),
// for callers that hold a deadline rather than a context with one.
func (p *Pool) EvalIntsUntil(ctx context.Context, deadline time.Time, s *Script, a *Args, dst []int64) ([]int64, error) {
	c, err := p.rc()
	if err != nil {
		return dst, err
	}
	// No closure here: this is every decision's call, and a closure over
	// a would move it to the heap.
	call, err := p.begin(ctx, deadline)
	if err != nil {
		return dst, err
	}
	defer call.end()
	keys, args := a.strs[:a.keys], a.strs[a.keys:a.n]
	for {
		dst, err = p.ints(c.Do(call.cctx, evalCmd(c, s, true, keys, args)), dst)
		if isNoScript(err) {
			dst, err = p.ints(c.Do(call.cctx, evalCmd(c, s, false, keys, args)), dst)
		}
		if !call.again(err) {
			return dst, err
		}
	}
}

// ints reads r, an array of integers, into dst[:0].
func (p *Pool) ints(r rueidis.RedisResult, dst []int64) ([]int64, error) {
	if err := r.NonRedisError(); err != nil {
		return dst, err
	}
	msg, err := r.ToMessage()
	if err != nil {
		return dst, p.replyErr(err)
	}
	arr, err := msg.ToArray()
	if err != nil {
		return dst, fmt.Errorf("%w: want an array of integers: %v", ErrProtocol, err)
	}
	dst = dst[:0]
	for i := range arr {
		v, err := arr[i].AsInt64()
		if err != nil || !arr[i].IsInt64() {
			return dst, fmt.Errorf("%w: element %d is %s, want an integer", ErrProtocol, i, arr[i].String())
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// EvalIntsWait is EvalIntsUntil followed, in the same write and on the
// same connection, by WAIT replicas timeout: it also returns how many
// replicas acknowledged the script's writes (and every earlier write on
// that connection) within timeout. The script's reply stands whatever
// WAIT says; deadline must leave WAIT its timeout.
func (p *Pool) EvalIntsWait(ctx context.Context, deadline time.Time, s *Script, a *Args, dst []int64, replicas int, timeout time.Duration) ([]int64, int64, error) {
	c, err := p.rc()
	if err != nil {
		return dst, 0, err
	}
	keys, args := a.strings()
	var acked int64
	err = p.exchange(ctx, deadline, func(ctx context.Context) error {
		var err error
		for _, sha := range []bool{true, false} {
			// WAIT is sent as a plain command: rueidis's typed one is
			// marked blocking, which changes nothing on a connection of
			// its own but the deadline it is given.
			res := c.DoMulti(ctx, evalCmd(c, s, sha, keys, args),
				c.B().Arbitrary("WAIT", strconv.Itoa(replicas), strconv.FormatInt(timeout.Milliseconds(), 10)).Build())
			dst, err = p.ints(res[0], dst)
			if sha && isNoScript(err) {
				continue
			}
			if err != nil {
				return err
			}
			if err := res[1].NonRedisError(); err != nil {
				return err
			}
			acked, err = res[1].AsInt64()
			if err != nil {
				if err = p.replyErr(err); errors.As(err, new(Error)) {
					return fmt.Errorf("WAIT: %w", err)
				}
				return fmt.Errorf("%w: WAIT answered %s, want an integer", ErrProtocol, res[1].String())
			}
			return nil
		}
		return err
	})
	return dst, acked, err
}

// Eval runs s with keys and args through EVALSHA (EVAL when the server
// answers NOSCRIPT), until deadline (zero: none), and returns its reply as
// go-redis does over RESP2: int64, string, nil, []any, and an error reply
// as Error (the returned error at the top, an element inside an array).
// It takes any script and reply, for users' own limiters.
func (p *Pool) Eval(ctx context.Context, deadline time.Time, s *Script, keys, args []string) (any, error) {
	c, err := p.rc()
	if err != nil {
		return nil, err
	}
	var reply any
	err = p.exchange(ctx, deadline, func(ctx context.Context) error {
		var err error
		for _, sha := range []bool{true, false} {
			r := c.Do(ctx, evalCmd(c, s, sha, keys, args))
			if err = r.NonRedisError(); err != nil {
				return err
			}
			msg, _ := r.ToMessage()
			reply, err = p.value(&msg, 0)
			if !sha || !isNoScript(err) {
				break
			}
		}
		return err
	})
	return reply, err
}

// maxDepth bounds how deeply value follows nested arrays.
const maxDepth = 64

// value is one reply as Eval returns it. An error reply is returned as
// the error (Error); inside an array, as an element.
func (p *Pool) value(m *rueidis.RedisMessage, depth int) (any, error) {
	switch {
	case m.IsNil():
		return nil, nil
	case m.IsInt64():
		return m.AsInt64()
	case m.IsString():
		return m.ToString()
	case m.IsArray():
		if depth >= maxDepth {
			return nil, fmt.Errorf("%w: arrays nested deeper than %d", ErrProtocol, maxDepth)
		}
		arr, _ := m.ToArray()
		out := make([]any, len(arr))
		for i := range arr {
			v, err := p.value(&arr[i], depth+1)
			var re Error
			switch {
			case errors.As(err, &re):
				out[i] = re
			case err != nil:
				return nil, err
			default:
				out[i] = v
			}
		}
		return out, nil
	}
	if err := m.Error(); err != nil {
		return nil, p.replyErr(err)
	}
	return nil, fmt.Errorf("%w: cannot read reply %s", ErrProtocol, m.String())
}
