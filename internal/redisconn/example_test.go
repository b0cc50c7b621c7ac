package redisconn_test

import (
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/internal/redisconn"
)

func ExampleRedact() {
	fmt.Println(redisconn.Redact("redis://alice:s3cret@10.0.0.5:6379/2"))
	fmt.Println(redisconn.Redact("redis+sentinel://:pw@s1:26379,s2:26379/mymaster?sentinel_password=spw"))
	fmt.Println(redisconn.Redact("redis+cluster://h1:7000,h2:7001"))
	// Output:
	// redis://alice:xxxxx@10.0.0.5:6379/2
	// redis+sentinel://:xxxxx@s1:26379,s2:26379/mymaster?sentinel_password=xxxxx
	// redis+cluster://h1:7000,h2:7001
}

func ExampleParse() {
	cfg, err := redisconn.Parse(redisconn.Options{
		URL:    "redis+sentinel://s1:26379,s2/mymaster/1",
		Getenv: func(string) string { return "from-REDISCLI_AUTH" },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := cfg.Target()
	fmt.Println(cfg.Mode(), t.Addrs, t.MasterName, t.DB)
	fmt.Println(cfg)
	// Output:
	// sentinel [s1:26379 s2:26379] mymaster 1
	// redis+sentinel://:xxxxx@s1:26379,s2:26379/mymaster/1
}

func BenchmarkParseURL(b *testing.B) {
	for b.Loop() {
		if _, err := redisconn.ParseURL("redis+sentinel://u:pw@s1:26379,s2:26379/mymaster/1?sentinel_password=x&timeout=1s"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedact(b *testing.B) {
	for b.Loop() {
		_ = redisconn.Redact("redis+sentinel://u:pw@s1:26379,s2:26379/mymaster/1?sentinel_password=x&timeout=1s")
	}
}
