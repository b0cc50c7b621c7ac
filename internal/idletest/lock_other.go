//go:build !unix

package idletest

// lock is a no-op where rlctl's tests do not run: the builds only lose
// the sharing the turns give.
func lock(string) (func(), error) { return func() {}, nil }
