package history

import (
	"time"
	"unsafe"

	"github.com/rlctl/rlctl/internal/decision"
)

// History is the in-memory decision record: one column per Record field, so
// appending allocates nothing once capacity is reserved and analysis scans
// only the columns it needs.
//
// Memory: 37 bytes per record (Intended 8, four packed 32-bit durations 16,
// Identity 4, Round 4, Gateway 2, Endpoint, Outcome and By 1 each). The
// times sit together in one row per record, the rest in one column per
// field.
//
// Precision: Intended is kept to the nanosecond. Sent, Received and Decided
// are kept as offsets from Intended, and RetryAfter as a plain duration, in a
// packed 32-bit form (see pack): exact to the nanosecond below ±0.53 s, to
// the microsecond below ±8.9 min and to the millisecond below ±6.2 days
// (always rounded down); anything larger is kept exactly in a side table.
// NoTime is kept exactly. So At(i) returns what Append got, except that a
// time more than half a second away from Intended loses its sub-microsecond
// digits, which no network measurement has anyway.
type History struct {
	Meta Meta

	// t holds the times of each record side by side, so reading one
	// record's times (as analysis does, jumping between records of one
	// identity) costs one cache miss instead of five.
	t        []times
	identity []uint32
	round    []int32
	gateway  []uint16
	endpoint []uint8
	outcome  []decision.Outcome
	by       []decision.By
	// big holds, per packed column (colSent..colWaited), the values too
	// large for the packed form; a packed value refers to it by index.
	big [numCols][]time.Duration

	// attempt and retry hold Record.Attempt, Told and Waited. They stay nil
	// until the first retry is appended (then earlier records are filled in
	// as first attempts), so a run without retries pays nothing for them.
	attempt []uint8
	retry   []retryTimes

	// sp, when set, writes records past a threshold to disk (see Spill).
	sp *spill
	// disk, when set, is a saved file read in place (see OpenFile).
	disk *onDisk
}

// retryTimes is one record's Told and Waited, packed like RetryAfter.
type retryTimes struct {
	told, waited int32
}

// times is one record's times: Intended exactly; Sent, Received and
// Decided packed as offsets from Intended; RetryAfter packed as is.
type times struct {
	intended                            time.Duration
	sent, received, decided, retryAfter int32
}

const (
	colSent = iota
	colReceived
	colDecided
	colRetry
	// numPacked is the number of packed columns every history has; the
	// retry columns after it exist only in histories with retries.
	numPacked
	colTold = iota - 1
	colWaited
	numCols
)

// BytesPerRecord is the in-memory size of one record in a History.
const BytesPerRecord = 8 + 4*4 + 4 + 4 + 2 + 1 + 1 + 1

// New returns an empty history with room for capacity records.
func New(meta Meta, capacity int) *History {
	h := &History{Meta: meta}
	h.Grow(capacity)
	return h
}

// Grow makes room for n more records without reallocating, so a run that
// knows its request cap appends with no allocation at all.
func (h *History) Grow(n int) {
	if n <= 0 {
		return
	}
	h.t = grow(h.t, n)
	h.identity = grow(h.identity, n)
	h.round = grow(h.round, n)
	h.gateway = grow(h.gateway, n)
	h.endpoint = grow(h.endpoint, n)
	h.outcome = grow(h.outcome, n)
	h.by = grow(h.by, n)
	if h.attempt != nil {
		h.attempt = grow(h.attempt, n)
		h.retry = grow(h.retry, n)
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), len(s)+n)
	copy(out, s)
	return out
}

// Append adds r. It is not safe for concurrent use: one consumer appends.
func (h *History) Append(r Record) {
	if h.sp != nil {
		h.appendSpill(r)
		return
	}
	h.appendMem(r)
}

func (h *History) appendMem(r Record) {
	h.t = append(h.t, times{
		intended:   r.Intended,
		sent:       h.packOffset(colSent, r.Intended, r.Sent),
		received:   h.packOffset(colReceived, r.Intended, r.Received),
		decided:    h.packOffset(colDecided, r.Intended, r.Decided),
		retryAfter: h.pack(colRetry, r.RetryAfter),
	})
	h.identity = append(h.identity, r.Identity)
	h.round = append(h.round, r.Round)
	h.gateway = append(h.gateway, r.Gateway)
	h.endpoint = append(h.endpoint, r.Endpoint)
	h.outcome = append(h.outcome, r.Outcome)
	h.by = append(h.by, r.By)
	if r.Attempt == 0 && h.attempt == nil {
		return
	}
	if h.attempt == nil {
		// The first retry: the records before it were first attempts.
		k := len(h.outcome) - 1
		h.attempt = make([]uint8, k, cap(h.outcome))
		h.retry = make([]retryTimes, k, cap(h.outcome))
	}
	var rt retryTimes // a first attempt: zero, as it came
	if r.Attempt > 0 {
		rt = retryTimes{h.pack(colTold, r.Told), h.pack(colWaited, r.Waited)}
	}
	h.attempt = append(h.attempt, r.Attempt)
	h.retry = append(h.retry, rt)
}

// HasRetries reports whether any record is a retry.
func (h *History) HasRetries() bool {
	if h.attempt != nil {
		return true
	}
	if h.disk != nil {
		return h.disk.retries
	}
	sp := h.sp
	return sp != nil && (sp.retries || sp.tail != nil && sp.tail.attempt != nil)
}

// Len is the number of records.
func (h *History) Len() int {
	if h.disk != nil {
		return h.disk.layout.n
	}
	if h.sp != nil && h.sp.tail != nil {
		return h.sp.queued + h.sp.tail.Len()
	}
	return len(h.outcome)
}

// At returns record i.
func (h *History) At(i int) Record {
	t := &h.t[i]
	in := t.intended
	return Record{
		Intended:   in,
		Sent:       h.unpackOffset(colSent, in, t.sent),
		Received:   h.unpackOffset(colReceived, in, t.received),
		Decided:    h.unpackOffset(colDecided, in, t.decided),
		RetryAfter: h.unpack(colRetry, t.retryAfter),
		Identity:   h.identity[i], Round: h.round[i], Gateway: h.gateway[i],
		Endpoint: h.endpoint[i], Outcome: h.outcome[i], By: h.by[i],
		Attempt: h.Attempt(i), Told: h.Told(i), Waited: h.Waited(i),
	}
}

// The column accessors below read one field of record i without building a
// whole Record, for analysis loops over millions of records.

// Intended returns record i's intended send time.
func (h *History) Intended(i int) time.Duration { return h.t[i].intended }

// Sent returns record i's send time.
func (h *History) Sent(i int) time.Duration {
	t := &h.t[i]
	return h.unpackOffset(colSent, t.intended, t.sent)
}

// Received returns record i's receive time.
func (h *History) Received(i int) time.Duration {
	t := &h.t[i]
	return h.unpackOffset(colReceived, t.intended, t.received)
}

// Decided returns record i's decision time, or NoTime.
func (h *History) Decided(i int) time.Duration {
	t := &h.t[i]
	return h.unpackOffset(colDecided, t.intended, t.decided)
}

// RetryAfter returns record i's Retry-After, or NoTime.
func (h *History) RetryAfter(i int) time.Duration { return h.unpack(colRetry, h.t[i].retryAfter) }

// Identity returns record i's identity index.
func (h *History) Identity(i int) uint32 { return h.identity[i] }

// Round returns record i's round, or NoRound.
func (h *History) Round(i int) int32 { return h.round[i] }

// Gateway returns record i's gateway index.
func (h *History) Gateway(i int) uint16 { return h.gateway[i] }

// Endpoint returns record i's endpoint index.
func (h *History) Endpoint(i int) uint8 { return h.endpoint[i] }

// Outcome returns record i's outcome.
func (h *History) Outcome(i int) decision.Outcome { return h.outcome[i] }

// By returns what decided record i.
func (h *History) By(i int) decision.By { return h.by[i] }

// Attempt returns record i's attempt: 0 for a first try, k for a k-th retry.
func (h *History) Attempt(i int) uint8 {
	if h.attempt == nil {
		return 0
	}
	return h.attempt[i]
}

// Told returns, for a retry, the wait its previous answer asked for and
// the client honoured (NoTime when none); 0 for a first attempt.
func (h *History) Told(i int) time.Duration {
	if h.retry == nil {
		return 0
	}
	return h.unpack(colTold, h.retry[i].told)
}

// Waited returns, for a retry, how long its client waited after the
// previous answer; 0 for a first attempt.
func (h *History) Waited(i int) time.Duration {
	if h.retry == nil {
		return 0
	}
	return h.unpack(colWaited, h.retry[i].waited)
}

// Packed 32-bit durations. The low two bits say the unit of the rest:
//
//	00  nanoseconds   (value fits in 30 signed bits: ±0.53 s)
//	01  microseconds  (±8.9 min)
//	10  milliseconds  (±6.2 days)
//	11  special: payload 0 is NoTime, payload k > 0 is big[col][k-1]
//
// Finer units win, so short latencies - almost all of them - stay exact.
const (
	tagNs      = 0
	tagUs      = 1
	tagMs      = 2
	tagSpecial = 3
	payloadMin = -(1 << 29)
	payloadMax = 1<<29 - 1
	packedNone = int32(tagSpecial) // special, payload 0
)

func (h *History) packOffset(col int, base, d time.Duration) int32 {
	if d == NoTime {
		return packedNone
	}
	return h.pack(col, d-base)
}

func (h *History) unpackOffset(col int, base time.Duration, p int32) time.Duration {
	if p == packedNone {
		return NoTime
	}
	return base + h.unpack(col, p)
}

func (h *History) pack(col int, d time.Duration) int32 {
	if d == NoTime && col >= colRetry {
		return packedNone
	}
	if d >= payloadMin && d <= payloadMax {
		return int32(d)<<2 | tagNs
	}
	if v := floorDiv(int64(d), int64(time.Microsecond)); v >= payloadMin && v <= payloadMax {
		return int32(v)<<2 | tagUs
	}
	if v := floorDiv(int64(d), int64(time.Millisecond)); v >= payloadMin && v <= payloadMax {
		return int32(v)<<2 | tagMs
	}
	h.big[col] = append(h.big[col], d)
	k := len(h.big[col])
	if k > payloadMax {
		// Half a billion huge values would be a broken clock, not a run;
		// saturate rather than corrupt the column.
		return int32(payloadMax)<<2 | tagMs
	}
	return int32(k)<<2 | tagSpecial
}

func (h *History) unpack(col int, p int32) time.Duration {
	v := time.Duration(p >> 2) // arithmetic shift keeps the sign
	switch p & 3 {
	case tagNs:
		return v
	case tagUs:
		return v * time.Microsecond
	case tagMs:
		return v * time.Millisecond
	}
	if v <= 0 {
		return NoTime
	}
	return h.big[col][v-1]
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// MemoryBytes is the heap the history's columns hold (capacity, not length).
func (h *History) MemoryBytes() int64 {
	n := int64(cap(h.t))*int64(unsafe.Sizeof(times{})) +
		int64(cap(h.identity))*4 + int64(cap(h.round))*4 + int64(cap(h.gateway))*2 +
		int64(cap(h.endpoint)+cap(h.outcome)+cap(h.by)) +
		int64(cap(h.attempt)) + int64(cap(h.retry))*int64(unsafe.Sizeof(retryTimes{}))
	for _, b := range h.big {
		n += int64(cap(b)) * 8
	}
	return n
}
