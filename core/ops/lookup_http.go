package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"streamd/core"
)

// LookupHTTPOptions configure LookupHTTP.
type LookupHTTPOptions struct {
	// URL is the http or https URL to GET per key, with {key} where the
	// key goes: path-escaped before a '?', query-escaped after it.
	URL string
	// Key is the input field looked up: a string field's value, or the
	// text form (core.AppendText) of a field of another type.
	Key string
	// Fields are the members of the response's JSON object added to each
	// record, by name and type. A missing or null member is the type's
	// zero value; numbers and strings convert as core.ParseValue does.
	Fields []core.Field
	// OnMiss is what a 404 response does to the records of that key:
	// "null" (the default) adds nulls (the added fields are then
	// Nullable); "empty" adds zero values; "drop" drops them; "error" hands
	// them to the error policy. A null key is a miss too.
	OnMiss string
	// Timeout bounds one request, response body included (default 5s).
	Timeout time.Duration
	// TTL is how long a response (found or 404) stays cached; ≤ 0: until
	// evicted. An expired response is fetched again when a batch next asks
	// for its key; until then it stays in the cache, counting against
	// MaxCost.
	TTL time.Duration
	// Now, if set, is the clock TTL is measured by (nil: time.Now); tests
	// script it. Each instance reads it once per batch, on its own
	// goroutine: concurrently when there are several channels.
	Now func() time.Time
	// MaxCost is the cache's capacity in entries: every key costs 1
	// (default 100,000).
	MaxCost int64
	// NumCounters is the number of ristretto's admission counters
	// (default 10 × MaxCost, as ristretto recommends).
	NumCounters int64
	// Concurrency is the number of requests one instance has in flight
	// while it resolves a batch's distinct keys (default 8).
	Concurrency int
	// Retries is how many times a request that failed for a reason that
	// may pass (no connection, a timeout, a 5xx or 429 status) is tried
	// again, after Backoff, doubled each time (up to 2 s); 0: no retry
	// (the job file's default is 2).
	Retries int
	// Backoff is the wait before the first retry (default 100 ms).
	Backoff time.Duration
	// BreakerFailures is how many such failures in a row open the circuit
	// breaker: for BreakerCooldown no request is sent and every lookup
	// fails at once (ErrCircuitOpen, to the error policy) — a server that
	// is down is not asked for every key — then one request tries it
	// again. ≤ 0: no breaker (the job file's default is 10).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open (default 5 s),
	// measured by Now.
	BreakerCooldown time.Duration
	// Sleep, if set, waits d or until ctx is done (tests script it; nil:
	// a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Redirects says which redirects a request follows: "same_host" (the
	// default: to the URL's own scheme and host), "any" or "none" (a
	// redirect response is then an error). A key must not lead the lookup
	// to another server unless the job allows it.
	Redirects string
	// Client, if set, sends the requests; otherwise the operator uses its
	// own transport, whose idle connections close with the cache.
	Client *http.Client
}

// LookupHTTP joins each record with a JSON object fetched over HTTP: GET
// URL with the record's key; on 200 the object's Fields are added to the
// record. Responses (found and 404) are kept in a ristretto cache shared by
// all instances, so repeated keys do not reach the server; within a batch
// each distinct key is resolved once, and the keys the cache lacks are
// fetched Concurrency at a time. The cache is created by the first instance
// and closed when the last instance finishes (core.Operator.Finish); a Set
// that ristretto drops under contention only costs a later refetch.
//
// Shapes: the output schema is in's fields followed by Fields.
//
// Ownership: Process reads the borrowed input batch and writes one output
// record per kept input record through out.Append, copying Seq, Hash, Time
// and Pos; the caller releases the input. Process blocks on the network
// (at most Timeout per round of requests).
//
// Errors: the constructor fails on a URL without {key}, an unknown key
// field, clashing field names or a bad OnMiss. A 404 follows OnMiss; any
// other failure (no connection, timeout, a non-2xx status, a body that is
// not a JSON object with convertible members) is not cached and hands each
// record of that key to errs (nil: the instance's Env.Errors; both nil:
// fail). Stats reports hits and misses (records whose key was or was not in
// the cache), requests, not_found, errors (failed requests, and lookups the
// open breaker refused) and retries.
func LookupHTTP(name string, opts LookupHTTPOptions, in *core.Schema, errs *core.ErrorPolicy) (core.OperatorDef, error) {
	fail := func(err error) (core.OperatorDef, error) {
		return core.OperatorDef{}, fmt.Errorf("lookup_http %s: %w", name, err)
	}
	s := &httpShared{opts: opts}
	var err error
	if s.miss, err = parseMiss(opts.OnMiss); err != nil {
		return fail(err)
	}
	if s.key, err = in.Lookup(opts.Key); err != nil {
		return fail(fmt.Errorf("key: %w", err))
	}
	i := strings.Index(opts.URL, "{key}")
	if i < 0 {
		return fail(fmt.Errorf("url %q has no {key}", opts.URL))
	}
	if u, err := url.Parse(strings.ReplaceAll(opts.URL, "{key}", "k")); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(fmt.Errorf("url %q: expected an http or https URL", opts.URL))
	}
	s.escape = escapeSegment
	if q := strings.IndexByte(opts.URL, '?'); q >= 0 && q < i {
		s.escape = url.QueryEscape
	}
	switch opts.Redirects {
	case "", "same_host", "any", "none":
	default:
		return fail(fmt.Errorf("redirects %q: expected same_host, any or none", opts.Redirects))
	}
	base, _ := url.Parse(strings.ReplaceAll(opts.URL, "{key}", "k"))
	s.origin = base.Scheme + "://" + base.Host
	if len(opts.Fields) == 0 {
		return fail(errors.New("no fields to add"))
	}
	out, err := joinSchema(in, opts.Fields, s.miss)
	if err != nil {
		return fail(err)
	}
	if s.opts.Timeout <= 0 {
		s.opts.Timeout = 5 * time.Second
	}
	if s.opts.TTL < 0 {
		s.opts.TTL = 0
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.MaxCost <= 0 {
		s.opts.MaxCost = 100_000
	}
	if s.opts.NumCounters <= 0 {
		s.opts.NumCounters = 10 * s.opts.MaxCost
	}
	if s.opts.Retries < 0 {
		s.opts.Retries = 0
	}
	if s.opts.Backoff <= 0 {
		s.opts.Backoff = 100 * time.Millisecond
	}
	if s.opts.BreakerCooldown <= 0 {
		s.opts.BreakerCooldown = 5 * time.Second
	}
	if s.opts.Sleep == nil {
		s.opts.Sleep = sleepCtx
	}
	if s.opts.Concurrency <= 0 {
		s.opts.Concurrency = 8
	}
	s.fields = append([]core.Field(nil), opts.Fields...)
	return core.OperatorDef{
		Name: name,
		Out:  out,
		Keep: core.KeepAll(len(in.Fields)), // the table's fields come after the input's
		New: func(env core.Env) (core.Operator, error) {
			cache, client, err := s.acquire()
			if err != nil {
				return nil, fmt.Errorf("lookup_http %s: %w", name, err)
			}
			return &httpLookup{name: name, in: in, s: s, cache: cache, client: client, fill: missFill(s.miss, len(opts.Fields)),
				keyType: in.Fields[s.key].Type, keyNull: in.Fields[s.key].Nullable, errs: policy(errs, env), slot: make(map[string]int32)}, nil
		},
		Stats: s.statsMap,
	}, nil
}

// httpEntry is a cached response: the added values, or a 404.
type httpEntry struct {
	found   bool
	vals    []core.Value
	expires int64 // ns by LookupHTTPOptions.Now; 0: never
}

// httpShared is what the instances of one LookupHTTP share: the options,
// the counters, and the cache and client while an instance lives.
type httpShared struct {
	opts    LookupHTTPOptions
	key     int
	fields  []core.Field
	miss    miss
	escape  func(string) string
	origin  string // the URL's scheme://host, for Redirects
	breaker breaker

	hits, misses, requests, notFound, errors, retries atomic.Int64

	mu        sync.Mutex
	live      int
	cache     *ristretto.Cache[string, *httpEntry]
	client    *http.Client
	transport *http.Transport // ours, or nil when opts.Client is used
}

func (s *httpShared) acquire() (*ristretto.Cache[string, *httpEntry], *http.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		c, err := ristretto.NewCache(&ristretto.Config[string, *httpEntry]{
			NumCounters:        s.opts.NumCounters,
			MaxCost:            s.opts.MaxCost,
			BufferItems:        64,
			IgnoreInternalCost: true, // cost is entries, not bytes
		})
		if err != nil {
			return nil, nil, fmt.Errorf("cache: %w", err)
		}
		s.cache, s.client = c, s.opts.Client
		if s.client == nil {
			s.transport = http.DefaultTransport.(*http.Transport).Clone()
			s.transport.MaxIdleConnsPerHost = s.opts.Concurrency
			s.client = &http.Client{Transport: s.transport, CheckRedirect: s.checkRedirect}
		}
	}
	s.live++
	return s.cache, s.client, nil
}

// release is an instance's Close: the last one out closes the cache (its
// goroutines stop) and our idle connections.
func (s *httpShared) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live--; s.live > 0 {
		return
	}
	s.cache.Close()
	s.cache = nil
	if s.transport != nil {
		s.transport.CloseIdleConnections()
		s.transport = nil
	}
}

func (s *httpShared) statsMap() map[string]int64 {
	return map[string]int64{
		"hits": s.hits.Load(), "misses": s.misses.Load(), "requests": s.requests.Load(),
		"not_found": s.notFound.Load(), "errors": s.errors.Load(), "retries": s.retries.Load(),
	}
}

// escapeSegment escapes a key for a path segment: url.PathEscape, and a
// key that is all dots ("." or "..", which servers and proxies resolve as
// the current or parent directory) has its dots escaped too.
func escapeSegment(key string) string {
	if key != "" && strings.Trim(key, ".") == "" {
		return strings.Repeat("%2E", len(key))
	}
	return url.PathEscape(key)
}

// checkRedirect follows Redirects (http.Client.CheckRedirect), and at most
// 10 redirects, as the default client does.
func (s *httpShared) checkRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case s.opts.Redirects == "none":
		return fmt.Errorf("redirected to %s (redirects: none)", req.URL.Redacted())
	case s.opts.Redirects != "any" && req.URL.Scheme+"://"+req.URL.Host != s.origin:
		return fmt.Errorf("redirected to another host, %s (redirects: same_host; any allows it)", req.URL.Redacted())
	}
	return nil
}

// maxBody bounds the response body read per request.
const maxBody = 1 << 20

// fetch is get with the retries and the circuit breaker: a new entry
// (found or a 404) or the last error.
func (s *httpShared) fetch(client *http.Client, key string) (*httpEntry, error) {
	backoff := s.opts.Backoff
	for attempt := 0; ; attempt++ {
		if err := s.breaker.allow(s.opts.Now()); err != nil {
			s.errors.Add(1)
			return nil, err
		}
		e, err := s.get(client, key)
		transient := err != nil && errors.Is(err, errTransient)
		s.breaker.result(transient, s.opts.Now(), s.opts.BreakerFailures, s.opts.BreakerCooldown)
		if !transient || attempt >= s.opts.Retries {
			return e, err
		}
		s.retries.Add(1)
		if serr := s.opts.Sleep(context.Background(), backoff); serr != nil {
			return nil, err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// errTransient marks a failure that may pass (errors.Is): no connection,
// a timeout, a 5xx or 429 status. fetch retries those and counts them for
// the breaker.
var errTransient = errors.New("transient")

// ErrCircuitOpen is the cause (errors.Is) of a lookup refused without a
// request because the breaker is open (LookupHTTPOptions.BreakerFailures).
var ErrCircuitOpen = errors.New("lookup server failing: circuit breaker open")

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// breaker is the circuit breaker shared by a lookup's instances: closed
// (requests go), open until a time (none go), then half-open (one goes;
// its success closes it, its failure opens it again).
type breaker struct {
	mu       sync.Mutex
	failures int       // transient failures in a row
	openTill time.Time // while open
	probing  bool      // half-open: a request is out
}

// allow says whether a request may go now.
func (b *breaker) allow(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.openTill.IsZero():
		return nil
	case now.Before(b.openTill) || b.probing:
		return fmt.Errorf("%w (until %s)", ErrCircuitOpen, b.openTill.Format(time.RFC3339))
	}
	b.probing = true // half-open: this request tries the server
	return nil
}

// result records a request's outcome (transient: it failed in a way that
// may pass); limit failures in a row open the breaker for cooldown.
func (b *breaker) result(transient bool, now time.Time, limit int, cooldown time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !transient {
		b.failures, b.openTill, b.probing = 0, time.Time{}, false
		return
	}
	b.failures++
	if limit > 0 && (b.probing || b.failures >= limit) {
		b.openTill, b.probing = now.Add(cooldown), false
	}
}

// get fetches key once: a new entry (found or a 404) or an error.
func (s *httpShared) get(client *http.Client, key string) (*httpEntry, error) {
	u := strings.ReplaceAll(s.opts.URL, "{key}", s.escape(key))
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		s.errors.Add(1)
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	s.requests.Add(1)
	resp, err := client.Do(req)
	if err != nil {
		s.errors.Add(1)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s: no response within %s: %w", u, s.opts.Timeout, errors.Join(ErrTimeout, errTransient))
		}
		var ue *url.Error
		if errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "redirect") {
			return nil, fmt.Errorf("GET %s: %w", u, err) // a refused redirect: no retry
		}
		return nil, fmt.Errorf("GET %s: %w", u, errors.Join(err, errTransient))
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxBody)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		io.Copy(io.Discard, body)
		s.notFound.Add(1)
		return &httpEntry{}, nil
	case resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests:
		io.Copy(io.Discard, body)
		s.errors.Add(1)
		return nil, fmt.Errorf("GET %s: %s: %w", u, resp.Status, errTransient)
	case resp.StatusCode/100 != 2:
		io.Copy(io.Discard, body)
		s.errors.Add(1)
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	vals, err := s.decode(body)
	if err != nil {
		s.errors.Add(1)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s: no response within %s: %w", u, s.opts.Timeout, ErrTimeout)
		}
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &httpEntry{found: true, vals: vals}, nil
}

// ErrTimeout is the cause (errors.Is) of a lookup request that got no
// complete response within LookupHTTPOptions.Timeout.
var ErrTimeout = errors.New("lookup timed out")

func (s *httpShared) decode(r io.Reader) ([]core.Value, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("response is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("response is null, expected a JSON object")
	}
	vals := make([]core.Value, len(s.fields))
	for k, f := range s.fields {
		raw, ok := obj[f.Name]
		if !ok || raw == nil {
			continue
		}
		v, err := jsonValue(f.Type, raw)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", f.Name, err)
		}
		vals[k] = v
	}
	return vals, nil
}

// jsonValue converts a decoded JSON member (UseNumber) to a value of type t.
func jsonValue(t core.Type, raw any) (core.Value, error) {
	if s, ok := raw.(string); ok {
		return core.ParseValue(t, s)
	}
	switch t {
	case core.String:
		switch x := raw.(type) {
		case json.Number:
			return core.StringValue(x.String()), nil
		case bool:
			return core.StringValue(strconv.FormatBool(x)), nil
		}
		b, err := json.Marshal(raw)
		return core.StringValue(string(b)), err
	case core.Int64, core.Timestamp:
		if n, ok := raw.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				return core.IntValue(i), nil
			}
			if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
				return core.IntValue(int64(f)), nil
			}
		}
	case core.Float64:
		if n, ok := raw.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				return core.FloatValue(f), nil
			}
		}
	case core.Bool:
		if b, ok := raw.(bool); ok {
			return core.BoolValue(b), nil
		}
	}
	return core.Value{}, fmt.Errorf("%v is not a %s", raw, t)
}

type httpLookup struct {
	name    string
	in      *core.Schema
	s       *httpShared
	cache   *ristretto.Cache[string, *httpEntry]
	client  *http.Client
	keyType core.Type
	keyNull bool         // the key field is Nullable: a null key matches nothing and is not fetched
	fill    []core.Value // what a miss adds under missEmpty or missNull
	errs    *core.ErrorPolicy
	done    bool

	// One batch's distinct keys: slot maps a key to its index in keys,
	// ents (the entry), fails (the error) and cached (it came from the
	// cache); recSlot is each record's key index; fetch lists the keys the
	// cache lacked.
	slot    map[string]int32
	keys    []string
	ents    []*httpEntry
	fails   []error
	cached  []bool
	recSlot []int32
	fetch   []int32
	buf     []byte
}

func (l *httpLookup) Process(in *core.Batch, out *core.Emitter) error {
	if err := checkWidth(l.name, l.in, in); err != nil {
		return err
	}
	w := in.Schema.Width()
	vals := in.Vals
	clear(l.slot)
	var now int64 // by opts.Now, read once per batch when entries expire
	if l.s.opts.TTL > 0 {
		now = l.s.opts.Now().UnixNano()
	}
	l.keys, l.ents, l.fails, l.cached = l.keys[:0], l.ents[:0], l.fails[:0], l.cached[:0]
	l.recSlot, l.fetch = l.recSlot[:0], l.fetch[:0]
	for i := 0; i < in.Len; i++ {
		if l.keyNull && vals[i*w+l.s.key].IsNull() {
			l.recSlot = append(l.recSlot, -1) // matches nothing: a miss
			continue
		}
		k, inBuf := keyText(l.keyType, vals[i*w+l.s.key], &l.buf)
		var j int32
		var seen bool
		if inBuf {
			if j, seen = l.slot[string(l.buf)]; !seen {
				k = string(l.buf)
			}
		} else {
			j, seen = l.slot[k]
		}
		if !seen {
			j = int32(len(l.keys))
			l.slot[k] = j
			e, hit := l.cache.Get(k)
			if hit && e.expires != 0 && now >= e.expires {
				e, hit = nil, false
			}
			l.keys, l.ents, l.fails, l.cached = append(l.keys, k), append(l.ents, e), append(l.fails, nil), append(l.cached, hit)
			if !hit {
				l.fetch = append(l.fetch, j)
			}
		}
		l.recSlot = append(l.recSlot, j)
	}
	l.resolve(now)

	var hits, misses int64
	defer func() {
		l.s.hits.Add(hits)
		l.s.misses.Add(misses)
	}()
	for i, j := range l.recSlot {
		if j < 0 {
			misses++
			switch l.s.miss {
			case missDrop:
				continue
			case missError:
				if err := bad(l.errs, l.name, in, i, fmt.Errorf("%w: %s is null", errNotFound, l.s.opts.Key)); err != nil {
					return err
				}
				continue
			}
			o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
			copy(o, vals[i*w:(i+1)*w])
			copy(o[w:], l.fill)
			continue
		}
		if l.cached[j] {
			hits++
		} else {
			misses++
		}
		if err := l.fails[j]; err != nil {
			if err := bad(l.errs, l.name, in, i, err); err != nil {
				return err
			}
			continue
		}
		add := l.ents[j].vals
		if !l.ents[j].found {
			switch l.s.miss {
			case missDrop:
				continue
			case missError:
				if err := bad(l.errs, l.name, in, i, fmt.Errorf("%w: %s=%q (404)", errNotFound, l.s.opts.Key, l.keys[j])); err != nil {
					return err
				}
				continue
			}
			add = l.fill
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		copy(o, vals[i*w:(i+1)*w])
		copy(o[w:], add)
	}
	return nil
}

// resolve fetches the keys the cache lacked, Concurrency at a time, caches
// the answers (expiring TTL after now, ns by opts.Now), and waits until the
// cache shows them.
func (l *httpLookup) resolve(now int64) {
	n := len(l.fetch)
	if n == 0 {
		return
	}
	get := func(x int) {
		j := l.fetch[x]
		l.ents[j], l.fails[j] = l.s.fetch(l.client, l.keys[j])
	}
	if workers := min(l.s.opts.Concurrency, n); workers == 1 {
		for x := range n {
			get(x)
		}
	} else {
		var next atomic.Int32
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for x := int(next.Add(1) - 1); x < n; x = int(next.Add(1) - 1) {
					get(x)
				}
			})
		}
		wg.Wait()
	}
	for _, j := range l.fetch {
		if l.fails[j] == nil {
			if ttl := l.s.opts.TTL; ttl > 0 {
				l.ents[j].expires = now + int64(ttl)
			}
			l.cache.Set(l.keys[j], l.ents[j], 1)
		}
	}
	l.cache.Wait()
}

// Watermark does nothing.
func (l *httpLookup) Watermark(int64, uint64, *core.Emitter) error { return nil }

// Finish does nothing: the instance lets go of the cache in Close.
func (l *httpLookup) Finish(uint64, *core.Emitter) error { return nil }

// Close releases the instance's hold on the shared cache (the last
// instance out closes it and its goroutines stop). The runtime calls it
// once, on every exit; a second call does nothing.
func (l *httpLookup) Close() error {
	if !l.done {
		l.done = true
		l.s.release()
	}
	return nil
}
