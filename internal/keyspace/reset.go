package keyspace

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

//go:embed reset.lua
var resetLua string

// resetScript deletes keys only where each still fits its layout, all
// checked before any is deleted.
var resetScript = redis.NewScript(fitLua + resetLua)

// ResetResult is what Reset did (or, in a dry run, would do). The JSON
// form is stable.
type ResetResult struct {
	// Deleted are the keys deleted (in a dry run, those that would be).
	Deleted []string `json:"deleted_keys"`
	// LeftAlone are keys whose type or value does not fit the layout
	// their name was read as: another application's keys, not deleted.
	LeftAlone []string `json:"left_alone"`
	// Gone are keys that no longer existed.
	Gone []string `json:"gone"`
}

// Reset deletes an identity's keys as Inspect read them, each only if it
// still holds what its layout writes (a counter an integer, a bucket its
// numeric fields ...): a key named like a limiter's but holding something
// else is another application's and is left alone. Keys no schema claims
// are never deleted. The check and the delete run in one script (one per
// hash slot on a Cluster), so the reset is atomic and no key can change
// in between. With dryRun the same check runs and nothing is deleted.
func Reset(ctx context.Context, c redis.UniversalClient, keys []*Key, dryRun bool) (ResetResult, error) {
	res := ResetResult{Deleted: []string{}, LeftAlone: []string{}, Gone: []string{}}
	bySlot := map[int][]*Key{}
	var slots []int
	_, cluster := c.(*redis.ClusterClient)
	for _, k := range keys {
		if k.schema == nil {
			res.LeftAlone = append(res.LeftAlone, k.Key)
			continue
		}
		slot := 0
		if cluster {
			slot = Slot(k.Key)
		}
		if _, ok := bySlot[slot]; !ok {
			slots = append(slots, slot)
		}
		bySlot[slot] = append(bySlot[slot], k)
	}
	if len(slots) == 0 {
		return res, nil
	}
	mode := "delete"
	if dryRun {
		mode = "check"
	}
	if err := resetScript.Load(ctx, c).Err(); err != nil {
		return res, fmt.Errorf("load reset script: %w", err)
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(slots))
	for i, slot := range slots {
		ks := bySlot[slot]
		args := []any{"evalsha", resetScript.Hash(), len(ks)}
		for _, k := range ks {
			args = append(args, k.Key)
		}
		args = append(args, mode)
		for _, k := range ks {
			args = append(args, k.schema.fitSpec(k.parsed, k.Type))
		}
		// Sent once: a retry after a lost reply would find the keys gone
		// and report them so.
		cmds[i] = redis.NewCmd(ctx, args...)
		_ = pipe.Process(ctx, once{cmds[i]})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		var re redis.Error
		if dryRun || errors.As(err, &re) {
			return res, fmt.Errorf("check %d keys: %w", len(keys), err)
		}
		return res, fmt.Errorf("reset %d keys: no answer, so they may or may not be deleted: %w", len(keys), err)
	}
	for i, slot := range slots {
		out, err := cmds[i].Int64Slice()
		ks := bySlot[slot]
		if err != nil || len(out) != len(ks) {
			return res, fmt.Errorf("reset: bad reply %v: %v", cmds[i].Val(), err)
		}
		for j, k := range ks {
			switch out[j] {
			case 1:
				res.Deleted = append(res.Deleted, k.Key)
			case 0:
				res.Gone = append(res.Gone, k.Key)
			default:
				res.LeftAlone = append(res.LeftAlone, k.Key)
			}
		}
	}
	return res, nil
}

// ResetPlan is what resetting one identity (or one key) would delete,
// checked on the server but with nothing deleted yet: the two steps of a
// reset that asks before it deletes.
type ResetPlan struct {
	// Keys are the limiter keys that hold what their layout writes: the
	// ones Apply deletes.
	Keys []string
	// LeftAlone are keys named like the identity's limiter keys whose type
	// or value is not a limiter's: never deleted.
	LeftAlone []string
	// Denied are the identity's keys the connected ACL user may not read:
	// not part of the plan (see Inspect).
	Denied []string

	client  redis.UniversalClient
	fitting []*Key
}

// PlanReset finds arg's limiter keys (see Inspect) and checks each against
// its layout. Keys no layout claims are not part of the plan at all: an
// argument naming some other key deletes nothing, whatever it holds. Keys
// the connected ACL user may not read are left out and listed in Denied;
// the error is then Inspect's *PermissionError, beside the plan of the
// rest.
func PlanReset(ctx context.Context, c redis.UniversalClient, schemas []*Schema, arg string) (*ResetPlan, error) {
	in, denied := Inspect(ctx, c, schemas, arg)
	var pe *PermissionError
	if denied != nil && !errors.As(denied, &pe) {
		return nil, denied
	}
	if pe != nil {
		pe.What = "reset " + arg
	}
	p := &ResetPlan{Keys: []string{}, LeftAlone: []string{}, Denied: in.Denied, client: c}
	var claimed []*Key
	for _, k := range in.Keys {
		if k.schema != nil {
			claimed = append(claimed, k)
		}
	}
	if len(claimed) == 0 {
		return p, denied
	}
	check, err := Reset(ctx, c, claimed, true)
	if err != nil {
		return nil, err
	}
	p.Keys, p.LeftAlone = check.Deleted, check.LeftAlone
	for _, k := range claimed {
		if slices.Contains(p.Keys, k.Key) {
			p.fitting = append(p.fitting, k)
		}
	}
	return p, denied
}

// Apply deletes the plan's keys, each only if it still fits its layout
// (Reset's atomic check): a key changed into something else since the plan
// is left alone and reported so.
func (p *ResetPlan) Apply(ctx context.Context) (ResetResult, error) {
	return Reset(ctx, p.client, p.fitting, false)
}
