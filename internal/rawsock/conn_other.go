//go:build !unix

package rawsock

import "net"

// Wrap returns nc: raw socket calls are made on Unix only.
func Wrap(nc net.Conn) net.Conn { return nc }
