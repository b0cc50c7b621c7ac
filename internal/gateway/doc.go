// Package gateway runs N simulated API gateways in one process, the way a
// fleet behind a load balancer runs them: each gateway has its own Redis
// client (its own connection pool), its own clock (optionally skewed), its
// own local state (local designs, lease slices, fallback allowances) and a
// failure policy per endpoint. A Balancer decides which gateway gets an
// identity's next request.
//
// Gateways can be killed (gateway-down): a dead gateway answers with an
// error and its lease slices are stranded until their window ends. A
// revived one comes back as a restarted process: fresh limiters, no memory
// of its earlier life.
package gateway
