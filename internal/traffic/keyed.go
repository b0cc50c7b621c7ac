package traffic

import (
	"context"
	"fmt"
)

// KeyedBySource returns a target that asks t with each identity's source
// address in place of the identity, identity i sending from source i mod
// sources (named as SourceName says): a limit keyed on the client's
// address, as nginx's limit_req and most middlewares key it by default,
// sees every user behind one address (an office behind NAT) as one
// client. The history still records each user as an identity of its own.
func KeyedBySource(t Target, sources int) Target {
	k := keyed{Target: t, names: make([]string, max(sources, 1))}
	for i := range k.names {
		k.names[i] = SourceName(uint32(i))
	}
	return k
}

// SourceName is the key KeyedBySource gives the requests sent from source
// address i.
func SourceName(i uint32) string { return fmt.Sprintf("source-%d", i) }

type keyed struct {
	Target
	names []string // per source address, made once: no allocation per request
}

func (k keyed) Do(ctx context.Context, r Request) Response {
	r.ID = k.names[int(r.Identity)%len(k.names)]
	return k.Target.Do(ctx, r)
}

// Warm passes through to the wrapped target.
func (k keyed) Warm(ctx context.Context, conns int) error {
	if w, ok := k.Target.(Warmer); ok {
		return w.Warm(ctx, conns)
	}
	return nil
}
