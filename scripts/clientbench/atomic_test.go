package clientbench

import "sync/atomic"

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add() int64 { return c.n.Add(1) - 1 }
