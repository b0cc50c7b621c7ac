package limiter

import (
	"hash/maphash"
)

// The local designs keep their state in the gateway's memory. They are
// correct for one gateway and wrong for many: N gateways admit N times the
// limit, which is what they exist to show.
//
// State that no longer matters (a window that ended, a bucket that has
// refilled) is dropped by a sweep of its shard at most once per window,
// so a long-running gateway (rlctl gateway serve) holds only the
// identities seen lately. Each sweep walks the shard once, and every entry
// it walks had a request since the last sweep or is deleted, so the cost
// stays proportional to the requests served.

// shards spreads identities over several locks so concurrent requests for
// different identities rarely contend.
const shards = 32

var seed = maphash.MakeSeed()

func shardOf(id string) int { return int(maphash.String(seed, id) % shards) }
