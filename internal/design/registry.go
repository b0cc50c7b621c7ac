package design

// all is the registry: every design, in the order of DESIGN.md. A new
// design is one file of this package and one line here.
var all = []*Design{
	&localFixedWindow,
	&localTokenBucket,
	&redisGetIncr,
	&redisFixedWindow,
	&redisFixedWindowRefresh,
	&redisClockWindow,
	&redisTokenBucket,
	&redisSlidingWindow,
	&redisSlidingLog,
	&redisGCRA,
	&leasing,
}
