package keyspace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScanCount is the COUNT hint of every SCAN: large enough to keep round
// trips few, small enough that one call never blocks Redis noticeably.
// Since ScanNode reads ahead, a SCAN can wait behind a page script and
// another client behind both, so both are kept short; make bench prints
// the p99 latency other clients see during a pass.
const ScanCount = 250

// Node is one primary being scanned: its address and a client for it.
type Node struct {
	Addr   string
	Client redis.UniversalClient
}

// ForEachPrimary calls fn for every primary: once for a standalone or
// Sentinel client, once per master (concurrently) on a Cluster. fn must
// be safe for concurrent use.
func ForEachPrimary(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, n Node) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return fn(ctx, Node{Addr: m.Options().Addr, Client: m})
		})
	}
	addr := ""
	if rc, ok := c.(*redis.Client); ok {
		addr = rc.Options().Addr
	}
	return fn(ctx, Node{Addr: addr, Client: c})
}

// CountKeys is the number of keys on every primary (DBSIZE), the total a
// full walk will scan, for progress. A primary that refuses DBSIZE (a
// restricted user) only leaves its keys out of the total; one that does
// not answer is an error, since a walk would wait as long again.
func CountKeys(ctx context.Context, c redis.UniversalClient) (int64, error) {
	var total atomic.Int64
	err := ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
		v, err := n.Client.DBSize(ctx).Result()
		var re redis.Error
		if err != nil && !errors.As(err, &re) {
			return fmt.Errorf("DBSIZE on %s: %w", n.Addr, err)
		}
		total.Add(v)
		return nil
	})
	return total.Load(), err
}

// ScanNode walks one node's keyspace with SCAN MATCH pattern, handing each
// page to fn, one page at a time and in order. It stops at the first error
// or when ctx is done.
//
// The next page is read while fn works on the current one: a serial loop
// leaves Redis idle while fn thinks and fn idle while SCAN runs, and SCAN
// alone is about a third of an audit's server time. Reading one page ahead
// (on a second connection of the client's pool) keeps memory bounded to
// three pages and lets both sides work at once.
func ScanNode(ctx context.Context, n Node, pattern string, fn func(keys []string) error) error {
	return ScanNodeConcurrently(ctx, n, pattern, 1, fn)
}

// ScanNodeConcurrently is ScanNode handing up to workers pages to fn at
// once, in no set order, for an fn safe for concurrent use: while one
// page's reads wait on Redis, another's answers are worked through.
func ScanNodeConcurrently(ctx context.Context, n Node, pattern string, workers int, fn func(keys []string) error) error {
	return scanPages(ctx, func(ctx context.Context, cursor uint64) ([]string, bool, uint64, error) {
		keys, next, err := n.Client.Scan(ctx, cursor, pattern, ScanCount).Result()
		if err != nil {
			return nil, false, 0, fmt.Errorf("scan %s on %s: %w", pattern, n.Addr, err)
		}
		return keys, len(keys) > 0, next, nil
	}, workers, fn)
}

// scanPages is ScanNode's engine for any way of reading a page: fetch
// reads the page at cursor (ok false when it is empty) and returns the
// next cursor, 0 at the end; it runs one page ahead of fn, on its own
// goroutine. Up to workers calls of fn run at once (1: one at a time, in
// order); the first error stops the walk.
func scanPages[P any](ctx context.Context, fetch func(ctx context.Context, cursor uint64) (page P, ok bool, next uint64, err error), workers int, fn func(P) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	pages := make(chan P, 1)
	var scanErr error // written by the scanner before it closes pages
	go func() {
		defer close(pages)
		var cursor uint64
		for {
			if err := sctx.Err(); err != nil {
				scanErr = err
				return
			}
			page, ok, next, err := fetch(sctx, cursor)
			if err != nil {
				scanErr = err
				return
			}
			if ok {
				select {
				case pages <- page:
				case <-sctx.Done():
					scanErr = sctx.Err()
					return
				}
			}
			if next == 0 {
				return
			}
			cursor = next
		}
	}()
	var (
		mu    sync.Mutex
		first error
	)
	consume := func() {
		for page := range pages {
			mu.Lock()
			failed := first != nil
			mu.Unlock()
			if failed {
				continue // drain: the scanner stops at stop()
			}
			if err := fn(page); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				stop()
			}
		}
	}
	// The scanner closes pages once stopped or done, and every consumer
	// returns after it: nothing of this walk runs after scanPages returns.
	// One consumer is the caller itself, as fn always ran.
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(consume)
	}
	consume()
	wg.Wait()
	if first != nil {
		return first
	}
	if scanErr != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return scanErr
}

// ScriptChunk is the most keys one server-side page script handles per
// call. A script blocks Redis while it runs; 100 keys of an audit take
// a fraction of a millisecond, so other clients barely notice.
const ScriptChunk = 100

// keyRun is a run of keys that a page script checks the same way: head
// holds the arguments that say how (passed once, ahead of the keys), idx
// each key's position in the caller's list.
type keyRun struct {
	head []any
	idx  []int
}

// runChunked runs a page script over runs of keys in calls of at most
// ScriptChunk keys, one after the other, and joins the replies. A run
// with a head goes as its head, its key count and its keys; one without
// as its bare keys. A run that does not fit the rest of a call is split,
// its head repeated. The calls are not pipelined on purpose: Redis runs a
// client's pipelined commands back to back, so other clients would wait
// for all chunks instead of one. A script answers with
// groups of stride items whose first is a 1-based key position within its
// call; positions are turned into 1-based positions in keys.
func runChunked(ctx context.Context, n Node, s *redis.Script, keys []string, runs []keyRun, stride int) ([]any, error) {
	var out []any
	args := make([]any, 0, 2*ScriptChunk)
	idx := make([]int, 0, ScriptChunk)
	flush := func() error {
		if len(idx) == 0 {
			return nil
		}
		res, err := s.Run(ctx, n.Client, nil, args...).Slice()
		if err != nil {
			return err
		}
		for i := 0; i+stride <= len(res); i += stride {
			if pos, ok := res[i].(int64); ok && pos >= 1 && int(pos) <= len(idx) {
				res[i] = int64(idx[pos-1] + 1)
			} else {
				return fmt.Errorf("bad reply %v", res[i])
			}
		}
		out = append(out, res...)
		args, idx = args[:0], idx[:0]
		return nil
	}
	for _, r := range runs {
		for rest := r.idx; len(rest) > 0; {
			if len(idx) == ScriptChunk {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			take := rest[:min(len(rest), ScriptChunk-len(idx))]
			rest = rest[len(take):]
			if len(r.head) > 0 {
				args = append(args, r.head...)
				args = append(args, len(take))
			}
			for _, i := range take {
				args = append(args, keys[i])
				idx = append(idx, i)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
