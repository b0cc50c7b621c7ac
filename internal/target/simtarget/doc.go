// Package simtarget is the target of in-process gateways: each request is a
// gateway.Decider's decision (a gateway.Set running one of rlctl's designs),
// with no network between the engine and the gateway.
package simtarget
