package design

import "fmt"

// LocalFixedWindow counts per identity in each gateway's memory.
const LocalFixedWindow = "local-fixed-window"

var localFixedWindow = Design{
	Name:    LocalFixedWindow,
	Summary: "a counter per identity in each gateway's memory, reset each aligned window: N gateways admit up to N×L",
	State:   StateLocal,
	Clock:   Clock{Fixed: ClockGateway},
	Theory: func(p Params) Theory {
		L, N := p.count(), p.gateways()
		return Theory{
			Bounded: true, Aligned: N * L, Ceiling: 2 * N * L,
			Why:    fmt.Sprintf("each of %d gateways counts alone: %d×L per aligned window, and each can admit L just before and L just after a boundary", int(N), int(N)),
			Worst:  fmt.Sprintf("all at one window boundary: every one of %d gateways admits L just before it and L just after", int(N)),
			Atomic: "per gateway only: the count is not shared",
			Clock:  "each gateway's own clock",
		}
	},
	Envelope: WindowEnvelope,
	Counter:  NoCounter,
}
