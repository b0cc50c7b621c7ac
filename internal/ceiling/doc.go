// Package ceiling is the theory a design review needs: for each limiter
// design, the most it can admit for one identity in any window of the
// published length, and why, plus the answers to the four questions a
// reviewer should ask of any limiter (is every check-and-increment atomic;
// whose clock decides the window; what happens when Redis is unreachable;
// what is the actual ceiling). `rlctl ceiling` prints it; package measure
// (`--measure`) puts a measurement beside it, compared with SpanCeiling
// when it covers less than a window.
package ceiling
