package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/keyspace"
	"github.com/rlctl/rlctl/internal/redisconn"
	"github.com/rlctl/rlctl/internal/target/scripttarget"
)

// newNamespace returns a key namespace no other run shares:
// "rlctl-3f9a2c1e:".
func newNamespace() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "rlctl-" + hex.EncodeToString(b[:]) + ":"
}

// prefixKeys is every key under prefix.
func prefixKeys(prefix string) keyspace.Patterns {
	return keyspace.Patterns{keyspace.EscapeGlob(prefix) + "*"}
}

// scriptKeys namespaces a redis-script target's key templates (when ns is
// set) and returns them with the patterns of the keys they render.
func scriptKeys(templates []string, ns string) ([]string, keyspace.Patterns, error) {
	out := make([]string, len(templates))
	var keys keyspace.Patterns
	for i, tpl := range templates {
		nsTpl, fixed, exact, err := scripttarget.NamespaceTemplate(tpl, ns)
		if err != nil {
			return nil, nil, err
		}
		out[i] = tpl
		if ns != "" {
			out[i] = nsTpl
		}
		if exact {
			keys = append(keys, keyspace.EscapeGlob(fixed))
		} else {
			keys = append(keys, keyspace.EscapeGlob(fixed)+"*")
		}
	}
	return out, keys, nil
}

// cleanupTimeout bounds the deletion of a run's keys from a shared Redis.
const cleanupTimeout = 10 * time.Second

// cleanup deletes the run's keys from a shared Redis once the run is over.
// Keys left behind (a timeout) expire by their own TTLs.
func cleanup(cfg *redisconn.Config, keys keyspace.Patterns) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		c := cfg.NewClient()
		defer c.Close()
		if _, err := keys.Delete(ctx, c); err != nil {
			return fmt.Errorf("delete the run's keys: %w", err)
		}
		return nil
	}
}
