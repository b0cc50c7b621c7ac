package history

import (
	"time"

	"github.com/rlctl/rlctl/internal/decision"
)

// History is the in-memory decision record: one column per Record field, so
// appending allocates nothing once capacity is reserved and analysis scans
// only the columns it needs.
type History struct {
	Meta Meta

	intended, sent, received, decided, retryAfter []time.Duration
	identity                                      []uint32
	round                                         []int32
	gateway                                       []uint16
	endpoint                                      []uint8
	outcome                                       []decision.Outcome
	by                                            []decision.By
}

// New returns an empty history with room for capacity records.
func New(meta Meta, capacity int) *History {
	return &History{
		Meta:       meta,
		intended:   make([]time.Duration, 0, capacity),
		sent:       make([]time.Duration, 0, capacity),
		received:   make([]time.Duration, 0, capacity),
		decided:    make([]time.Duration, 0, capacity),
		retryAfter: make([]time.Duration, 0, capacity),
		identity:   make([]uint32, 0, capacity),
		round:      make([]int32, 0, capacity),
		gateway:    make([]uint16, 0, capacity),
		endpoint:   make([]uint8, 0, capacity),
		outcome:    make([]decision.Outcome, 0, capacity),
		by:         make([]decision.By, 0, capacity),
	}
}

// Append adds r. It is not safe for concurrent use: one consumer appends.
func (h *History) Append(r Record) {
	h.intended = append(h.intended, r.Intended)
	h.sent = append(h.sent, r.Sent)
	h.received = append(h.received, r.Received)
	h.decided = append(h.decided, r.Decided)
	h.retryAfter = append(h.retryAfter, r.RetryAfter)
	h.identity = append(h.identity, r.Identity)
	h.round = append(h.round, r.Round)
	h.gateway = append(h.gateway, r.Gateway)
	h.endpoint = append(h.endpoint, r.Endpoint)
	h.outcome = append(h.outcome, r.Outcome)
	h.by = append(h.by, r.By)
}

// Len is the number of records.
func (h *History) Len() int { return len(h.outcome) }

// At returns record i.
func (h *History) At(i int) Record {
	return Record{
		Intended: h.intended[i], Sent: h.sent[i], Received: h.received[i],
		Decided: h.decided[i], RetryAfter: h.retryAfter[i], Identity: h.identity[i],
		Round: h.round[i], Gateway: h.gateway[i], Endpoint: h.endpoint[i],
		Outcome: h.outcome[i], By: h.by[i],
	}
}
