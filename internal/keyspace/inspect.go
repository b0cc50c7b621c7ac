package keyspace

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Inspection is what inspect found for one identity or key. Its JSON form
// is stable.
type Inspection struct {
	// Query is the identity or key asked about.
	Query string `json:"query"`
	// ExactKey is true when Query named an existing key.
	ExactKey bool `json:"exact_key"`
	// ServerTime is Redis TIME, the clock the interpretation used.
	ServerTime time.Time `json:"server_time"`
	// Keys are the identity's limiter keys, sorted by name.
	Keys []*Key `json:"keys"`
	// Denied are keys of the identity (or Query itself, when it is a key)
	// that exist but the connected ACL user may not read: left out.
	Denied []string `json:"denied_keys,omitempty"`
}

// Inspect reads every limiter key of an identity under schemas — or, when
// arg names an existing key, that key alone — and interprets each. Keys
// the connected ACL user may not read are left out and listed in Denied;
// the error is then a *PermissionError, beside the Inspection of the rest.
func Inspect(ctx context.Context, c redis.UniversalClient, schemas []*Schema, arg string) (*Inspection, error) {
	now, err := ServerTime(ctx, c)
	if err != nil {
		return nil, err
	}
	in := &Inspection{Query: arg, ServerTime: now, Keys: []*Key{}}
	// An argument that is an existing limiter key means that key. One that
	// is some other existing key only means it when no identity of that
	// name has limiter keys: "alice" may be both a key and a user.
	typ, err := c.Type(ctx, arg).Result()
	argDenied := IsNoPerm(err)
	if err != nil && !argDenied {
		return nil, fmt.Errorf("look up key %q: %w", arg, err)
	}
	exact := func() (*Inspection, error) {
		in.ExactKey = true
		keys, _, err := readKeys(ctx, c, schemas, []string{arg}, now)
		if err != nil {
			return nil, err
		}
		in.Keys = append(in.Keys, keys...)
		return in, nil
	}
	if typ != "none" && !argDenied {
		if _, _, ok := Match(schemas, arg, typ); ok {
			return exact()
		}
	}
	var probe []string
	if argDenied {
		probe = []string{arg}
	}
	names, deniedNames, err := identityKeys(ctx, c, schemas, arg, probe)
	if err != nil {
		return nil, err
	}
	keys, deniedKeys, err := readKeys(ctx, c, schemas, names, now)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		// The type decides between layouts that share names (Upstash's
		// window counter and bucket): keep a key only if the schema that
		// claims it with its type names this identity.
		if k.schema != nil && k.schema.HasID(k.parsed, arg) {
			in.Keys = append(in.Keys, k)
		}
	}
	if len(in.Keys) == 0 && typ != "none" && !argDenied {
		return exact()
	}
	blendSlidingWindows(in.Keys, now)
	joinSpringBucket(in.Keys, now)
	var d denied
	for _, k := range append(deniedNames, deniedKeys...) {
		if k != arg || len(in.Keys) == 0 {
			// arg as a key only matters when it is no identity's
			in.Denied = append(in.Denied, k)
			d.add(k)
		}
	}
	return in, d.err("inspect "+arg, false)
}

// joinSpringBucket reads Spring Cloud Gateway's two-key bucket as one: the
// tokens left at the last request, refilled since its timestamp.
func joinSpringBucket(keys []*Key, now time.Time) {
	var tokens, ts *Key
	for _, k := range keys {
		if k.schema != nil && k.schema.Name == SchemaSpring {
			switch k.parsed.Part {
			case "tokens":
				tokens = k
			case "timestamp":
				ts = k
			}
		}
	}
	if tokens == nil || ts == nil || tokens.Tokens == nil || ts.Value == nil || tokens.schema.params.Limit.Count <= 0 {
		return
	}
	sec, err := strconv.ParseFloat(*ts.Value, 64)
	if err != nil {
		return
	}
	bucketNow(tokens.schema, tokens, *tokens.Tokens, time.Unix(int64(sec), 0), now)
}

// blendSlidingWindows explains rlctl's sliding-window counter the way it
// decides: the current window's count plus the previous window's, weighted
// by how much of the previous window the sliding window still covers.
func blendSlidingWindows(keys []*Key, now time.Time) {
	byWindow := map[int64]*Key{}
	var s *Schema
	for _, k := range keys {
		if k.schema != nil && k.schema.own.Previous && k.Used != nil {
			byWindow[k.parsed.Window], s = k, k.schema
		}
	}
	if s == nil || s.params.Limit.Window <= 0 {
		return
	}
	w := s.params.Limit.Window.Milliseconds()
	n := now.UnixMilli() / w
	cur, ok := byWindow[n]
	if !ok {
		return
	}
	var prev int64
	if p, ok := byWindow[n-1]; ok {
		prev = *p.Used
	}
	weight := 1 - float64(now.UnixMilli()%w)/float64(w)
	est := float64(*cur.Used) + float64(prev)*weight
	cur.Meaning += fmt.Sprintf("; sliding count %.1f of %d (current %d + previous %d × %.0f%%)", est, s.params.Limit.Count, *cur.Used, prev, weight*100)
}

// IdentityKeys finds the existing keys of identity id under schemas: the
// exact names each schema would use, checked with EXISTS, and the names
// that carry more (window indexes, Kong routes, envoy domains) found by one
// SCAN pass per primary whose MATCH holds the identity literally. Names
// the connected ACL user may not check are looked for in that SCAN pass
// too (SCAN shows every key); those that exist make the error a
// *PermissionError, beside the names found.
func IdentityKeys(ctx context.Context, c redis.UniversalClient, schemas []*Schema, id string) ([]string, error) {
	found, no, err := identityKeys(ctx, c, schemas, id, nil)
	if err != nil {
		return nil, err
	}
	var d denied
	d.add(no...)
	return found, d.err("find "+id+"'s keys", false)
}

// identityKeys is IdentityKeys that also tells whether each of probe (names
// holding id) exists, and returns apart the existing names the user may
// not access.
func identityKeys(ctx context.Context, c redis.UniversalClient, schemas []*Schema, id string, probe []string) (found, no []string, err error) {
	seen := map[string]bool{}
	var exact, globs []string
	for _, s := range schemas {
		e, g := s.IdentityKeys(id)
		for _, k := range e {
			if !seen[k] {
				seen[k] = true
				exact = append(exact, k)
			}
		}
		globs = append(globs, g...)
	}
	has := map[string]bool{}
	// unsure are names EXISTS may not be asked about: SCAN tells.
	unsure := map[string]bool{}
	for _, k := range probe {
		unsure[k] = true
	}
	if len(exact) > 0 {
		pipe := c.Pipeline()
		cmds := make([]*redis.IntCmd, len(exact))
		for i, k := range exact {
			cmds[i] = pipe.Exists(ctx, k)
		}
		_, _ = pipe.Exec(ctx)
		for i, k := range exact {
			switch err := cmds[i].Err(); {
			case IsNoPerm(err):
				unsure[k] = true
			case err != nil:
				return nil, nil, fmt.Errorf("look up %s's keys: %w", id, err)
			case cmds[i].Val() == 1:
				has[k] = true
			}
		}
	}
	if len(globs) > 0 || len(unsure) > 0 {
		var mu sync.Mutex
		err := ForEachPrimary(ctx, c, func(ctx context.Context, n Node) error {
			return ScanNode(ctx, n, "*"+EscapeGlob(id)+"*", func(keys []string) error {
				mu.Lock()
				defer mu.Unlock()
				for _, k := range keys {
					if unsure[k] {
						no = append(no, k)
						continue
					}
					for _, g := range globs {
						if globMatch(g, k) {
							has[k] = true
							break
						}
					}
				}
				return nil
			})
		})
		if err != nil {
			return nil, nil, fmt.Errorf("find %s's keys: %w", id, err)
		}
	}
	found = make([]string, 0, len(has))
	for k := range has {
		found = append(found, k)
	}
	sort.Strings(found)
	sort.Strings(no)
	return found, no, nil
}

// Delete removes keys atomically: one DEL on a single node, one DEL per
// hash slot on a Cluster (a multi-key DEL must stay within a slot). It
// returns how many keys were removed.
func Delete(ctx context.Context, c redis.UniversalClient, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if _, ok := c.(*redis.ClusterClient); !ok {
		n, err := c.Del(ctx, keys...).Result()
		if err != nil {
			return 0, fmt.Errorf("delete %d keys: %w", len(keys), err)
		}
		return n, nil
	}
	bySlot := map[int][]string{}
	for _, k := range keys {
		bySlot[Slot(k)] = append(bySlot[Slot(k)], k)
	}
	pipe := c.Pipeline()
	var cmds []*redis.IntCmd
	for _, ks := range bySlot {
		cmds = append(cmds, pipe.Del(ctx, ks...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("delete %d keys: %w", len(keys), err)
	}
	var n int64
	for _, cmd := range cmds {
		n += cmd.Val()
	}
	return n, nil
}
