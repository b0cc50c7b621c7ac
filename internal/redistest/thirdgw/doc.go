// Package thirdgw is an independent gateway for tests: a small net/http
// server on loopback around a third-party Go rate limiter —
// go-redis/redis_rate (GCRA) or ulule/limiter (fixed window) — on a
// go-redis client the test builds (a FailoverClient through Sentinel, a
// ClusterClient), answering 200, or 429 with Retry-After, and logging
// every decision it made (when, for whom, allowed) as the ground truth a
// test compares rlctl's measurements with. None of rlctl's limiter or
// gateway code is in its path. Only tests import it.
package thirdgw
