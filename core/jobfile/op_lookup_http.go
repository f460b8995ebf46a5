package jobfile

import (
	"time"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/ops"
)

// LookupHTTPSpec joins with an HTTP JSON endpoint behind a cache.
type LookupHTTPSpec struct {
	URL       string        `yaml:"url"`
	Key       string        `yaml:"key"`
	Fields    yaml.MapSlice `yaml:"fields"` // name: type
	TTL       string        `yaml:"ttl"`
	MaxCost   int64         `yaml:"max_cost"`
	Timeout   string        `yaml:"timeout"`
	OnMiss    string        `yaml:"on_miss"`
	CacheKeys int64         `yaml:"cache_counters"`
	Redirects string        `yaml:"redirects"`
	// Retries and BreakerFailures are pointers: absent takes the default
	// (2 and 10), 0 turns them off.
	Retries         *int   `yaml:"retries"`
	RetryBackoff    string `yaml:"retry_backoff"`
	BreakerFailures *int   `yaml:"breaker_failures"`
	BreakerCooldown string `yaml:"breaker_cooldown"`
	// Concurrency is the number of requests each instance (each channel,
	// output worker or part) has in flight while it resolves a batch's
	// distinct keys: between 1 and maxLookupConcurrency; absent: 8. It
	// changes how fast the lookup goes, never what it outputs.
	Concurrency *int `yaml:"concurrency"`
}

// maxLookupConcurrency bounds lookup_http's concurrency: requests in
// flight per instance. More than this is more likely a typo than a server
// that answers better for it.
const maxLookupConcurrency = 256

// lookup_http: {url, key, fields, …} adds fields from an HTTP JSON
// endpoint, behind a cache (ops.LookupHTTP).
func init() {
	registerOp(opEntry[*LookupHTTPSpec]{name: "lookup_http", rank: 50, build: buildLookupHTTP,
		weak: func(*LookupHTTPSpec) (string, string) {
			return "", "lookup_http asks an outside service: the output holds what it answered (and, with a cache ttl, when), which no replay of the input fixes"
		}})
}

func buildLookupHTTP(b *opBuild, l *LookupHTTPSpec) (core.OperatorDef, error) {
	var def core.OperatorDef
	if err := b.lookupKey(l.Key); err != nil {
		return def, err
	}
	fs, err := b.f.fields(b.path+".fields", l.Fields)
	if err != nil {
		return def, err
	}
	ttl, err := b.f.duration(b.path+".ttl", l.TTL, time.Minute)
	if err != nil {
		return def, err
	}
	timeout, err := b.f.duration(b.path+".timeout", l.Timeout, 5*time.Second)
	if err != nil {
		return def, err
	}
	switch l.Redirects {
	case "", "same_host", "any", "none":
	default:
		return def, b.f.errAt(b.path+".redirects", "redirects %q: expected same_host (the default), any or none", l.Redirects)
	}
	retries, failures := 2, 10
	if l.Retries != nil {
		if retries = *l.Retries; retries < 0 || retries > 100 {
			return def, b.f.errAt(b.path+".retries", "retries must be between 0 and 100, not %d", retries)
		}
	}
	if l.BreakerFailures != nil {
		if failures = *l.BreakerFailures; failures < 0 {
			return def, b.f.errAt(b.path+".breaker_failures", "breaker_failures must be 0 (no breaker) or more, not %d", failures)
		}
	}
	concurrency := 8
	if l.Concurrency != nil {
		if concurrency = *l.Concurrency; concurrency < 1 || concurrency > maxLookupConcurrency {
			return def, b.f.errAt(b.path+".concurrency", "concurrency must be between 1 and %d (requests in flight per instance), not %d", maxLookupConcurrency, concurrency)
		}
	}
	backoff, err := b.f.duration(b.path+".retry_backoff", l.RetryBackoff, 100*time.Millisecond)
	if err != nil {
		return def, err
	}
	cooldown, err := b.f.duration(b.path+".breaker_cooldown", l.BreakerCooldown, 5*time.Second)
	if err != nil {
		return def, err
	}
	return ops.LookupHTTP(b.name, ops.LookupHTTPOptions{URL: l.URL, Key: l.Key, Fields: fs, TTL: ttl,
		MaxCost: l.MaxCost, Timeout: timeout, OnMiss: l.OnMiss, NumCounters: l.CacheKeys, Redirects: l.Redirects,
		Retries: retries, Backoff: backoff, BreakerFailures: failures, BreakerCooldown: cooldown,
		Concurrency: concurrency}, b.in, nil)
}
