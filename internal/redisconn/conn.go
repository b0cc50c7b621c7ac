package redisconn

import (
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options are the connection settings from the command line.
type Options struct {
	URL           string
	TLSCA         string
	TLSCert       string
	TLSKey        string
	TLSSkipVerify bool
	// Timeout bounds dialing and every command.
	Timeout time.Duration
	// Getenv reads the environment (REDISCLI_AUTH); nil means none.
	Getenv func(string) string
}

// Config is a parsed, validated connection target. NewClient may be called
// many times: each call returns a client with its own pool.
type Config struct {
	opts      Options
	universal *redis.UniversalOptions
}

// Parse validates opts.URL and the TLS settings.
func Parse(opts Options) (*Config, error) {
	o, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %w", Redact(opts.URL), err)
	}
	u := &redis.UniversalOptions{Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig}
	if opts.Timeout > 0 {
		u.DialTimeout, u.ReadTimeout, u.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	}
	return &Config{opts: opts, universal: u}, nil
}

// NewClient returns a new client with its own connection pool.
func (c *Config) NewClient() redis.UniversalClient {
	u := *c.universal
	return redis.NewUniversalClient(&u)
}

// String is the redacted URL.
func (c *Config) String() string { return Redact(c.opts.URL) }

// Redact hides the password of a URL (and anything that cannot be parsed).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
