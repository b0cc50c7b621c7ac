package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// floorCount is the SCAN COUNT of the reference passes, the figure the
// issue's estimate ("SCAN 1000 + every key's TTL pipelined") assumed.
const floorCount = 1000

// scanFloor times a reference pass over a standalone Redis, so
// scripts/bench-keys.sh can put rlctl's figures next to what the server
// needs at the least: "scan" only lists every key with SCAN COUNT 1000;
// "pttl" also reads every key's PTTL, one pipeline per page; "value"
// also reads every key's value with one MGET per page, the extra work an
// audit given a limit does (it reads each counter against the limit, and
// that read proves the counter's type). It prints the keys seen and the
// seconds taken.
func scanFloor(url, mode string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	var cursor uint64
	keys := 0
	start := time.Now()
	for {
		page, next, err := c.Scan(ctx, cursor, "*", floorCount).Result()
		if err != nil {
			return err
		}
		keys += len(page)
		switch mode {
		case "scan":
		case "pttl", "value":
			pipe := c.Pipeline()
			for _, k := range page {
				pipe.PTTL(ctx, k)
			}
			if mode == "value" && len(page) > 0 {
				pipe.MGet(ctx, page...)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown floor %q (scan, pttl or value)", mode)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	fmt.Printf("%d %.3f\n", keys, time.Since(start).Seconds())
	return nil
}

func runScanFloor(args []string) {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool scanfloor scan|pttl|value REDIS_URL")
		os.Exit(2)
	}
	if err := scanFloor(args[1], args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool scanfloor:", err)
		os.Exit(1)
	}
}
