// Package toxiproxy drives a Toxiproxy server (github.com/Shopify/toxiproxy)
// through its HTTP API, for network faults between a user's gateways and
// their Redis: the user runs the proxy in the gateways' path and names it
// ({api: http://127.0.0.1:8474, proxy: redis}); rlctl adds toxics to it
// and takes them away again.
//
// A Client acts on that one proxy only: Down disables it (Toxiproxy closes
// its connections and refuses new ones), Latency adds a latency toxic and
// ResetPeer a reset_peer toxic, each returning an Undo. The Client
// remembers everything it changed, and Cleanup undoes exactly that, on a
// fresh bounded context so it still runs after the run's context was
// cancelled (SIGINT): toxics someone else added, and a proxy someone else
// disabled, are left as they were.
//
// Errors carry exit codes (internal/exitcode): an API that cannot be
// reached is Unreachable, a proxy the server does not have is Usage and
// names the proxy.
package toxiproxy
