// Package deploy applies faults to a Redis deployment rlctl did not start —
// the one a user's real gateways keep their counters in — and watches what
// they do: Failover (SENTINEL FAILOVER, or CLUSTER FAILOVER on a replica of
// the shard holding given keys), Stall (CLIENT PAUSE, Redis 6.2 or newer),
// ResetKeys and ResetIdentities (deleting only the named keys, and only
// where they hold what their limiter layout writes), and Observe, which
// times the election from Redis's side: when the old primary stopped
// answering as primary, when the deployment named a new one, when the new
// one took writes, and the errors seen meanwhile.
//
// Consent: every function here changes a server the user owns. Callers
// invoke them only after checking the user's consent for that fault on the
// command line (--allow-failover, --allow-faults); nothing here checks it
// again, and nothing here is called by merely reading a scenario file.
// They never write or delete a key the caller did not name.
package deploy
