package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamd/core"
)

// airportServer is a loopback JSON service: GET /airports/{code} answers
// {"city": …, "elevation": …, "hub": …} for known codes, 404 for unknown
// ones, 500 for "BAD", and never answers "SLOW" (until the client gives up).
type airportServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
	total    atomic.Int64
}

var airportData = map[string]map[string]any{
	"ORD":     {"city": "Chicago", "elevation": 672, "hub": true, "opened": "1944-01-01"},
	"ATL":     {"city": "Atlanta", "elevation": 1026, "hub": true},
	"SFO":     {"city": "San Francisco", "elevation": 13.0, "hub": false},
	"JFK":     {"city": "New York", "elevation": nil},
	"DBN":     {"city": "Dublin", "elevation": "309"},
	"A B/C":   {"city": "Escaped"},
	"WEIRD":   {"city": 42, "elevation": "high"},
	"NOTJSON": nil,
}

func newAirportServer(t *testing.T) *airportServer {
	s := &airportServer{requests: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := strings.TrimPrefix(r.URL.Path, "/airports/")
		s.total.Add(1)
		s.mu.Lock()
		s.requests[code]++
		s.mu.Unlock()
		switch code {
		case "SLOW":
			<-r.Context().Done()
			return
		case "BAD":
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		case "NOTJSON":
			fmt.Fprint(w, "<html>")
			return
		}
		a, ok := airportData[code]
		if !ok {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *airportServer) count(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[code]
}

var cityFields = []core.Field{{Name: "city", Type: core.String}, {Name: "elevation", Type: core.Int64}, {Name: "hub", Type: core.Bool}}

func originBatch(origins ...string) *core.Batch {
	fs := make([]flight, len(origins))
	for i, o := range origins {
		fs[i] = flight{"AA", o, int64(i), 100}
	}
	return flightBatch(fs)
}

func TestLookupHTTPOneRequestPerKey(t *testing.T) {
	srv := newAirportServer(t)
	def, err := LookupHTTP("cities", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(carrier string, origin string, delay int64, distance float64, city string null, elevation int64 null, hub bool null)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	// 300 records over 5 distinct keys, in two batches: 5 requests.
	keys := []string{"ORD", "ATL", "SFO", "JFK", "DBN"}
	var origins []string
	for i := range 300 {
		origins = append(origins, keys[i*7%len(keys)])
	}
	out, err := run(t, def, core.Env{}, originBatch(origins[:200]...), originBatch(origins[200:]...))
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.total.Load(); n != int64(len(keys)) {
		t.Errorf("%d requests for %d distinct keys", n, len(keys))
	}
	if len(out) != 300 {
		t.Fatalf("%d records, want 300", len(out))
	}
	for i, r := range out {
		checkMeta(t, r, i%200)
		a := airportData[origins[i]]
		if r.vals[1].Str() != origins[i] || r.vals[4].Str() != a["city"] {
			t.Fatalf("record %d: %s → %q, want %q", i, r.vals[1].Str(), r.vals[4].Str(), a["city"])
		}
	}
	byOrigin := map[string][]core.Value{}
	for _, r := range out {
		byOrigin[r.vals[1].Str()] = r.vals
	}
	for code, want := range map[string]struct {
		elev int64
		hub  bool
	}{"ORD": {672, true}, "SFO": {13, false}, "JFK": {0, false}, "DBN": {309, false}} {
		if v := byOrigin[code]; v[5].Int() != want.elev || v[6].Bool() != want.hub {
			t.Errorf("%s: elevation %d hub %v, want %d %v", code, v[5].Int(), v[6].Bool(), want.elev, want.hub)
		}
	}
	st := def.Stats()
	if st["requests"] != 5 || st["misses"] != 200 || st["hits"] != 100 || st["errors"] != 0 {
		t.Errorf("stats %v; want 5 requests, 200 misses (first batch), 100 hits", st)
	}
}

// TestLookupHTTPSharedCacheAndTTL: instances share one cache, and a
// response expires after the TTL, on a scripted clock.
func TestLookupHTTPSharedCacheAndTTL(t *testing.T) {
	srv := newAirportServer(t)
	now := time.Unix(1e6, 0)
	const ttl = 150 * time.Millisecond
	def, err := LookupHTTP("cities", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin",
		Fields: cityFields, TTL: ttl, Now: func() time.Time { return now }}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two instances (two channels) share one cache.
	a, _ := def.New(core.Env{Channel: 0, Channels: 2})
	b, _ := def.New(core.Env{Channel: 1, Channels: 2})
	discard := core.NewEmitter(def.Out, func(b *core.Batch) error { b.Release(); return nil }, nil)
	process := func(op core.Operator, origins ...string) {
		in := originBatch(origins...)
		if err := op.Process(in, discard); err != nil {
			t.Fatal(err)
		}
		discard.Flush()
		in.Release()
	}
	process(a, "ORD", "ORD")
	now = now.Add(ttl - time.Nanosecond)
	process(b, "ORD")
	if n := srv.count("ORD"); n != 1 {
		t.Errorf("ORD fetched %d times by two instances within the TTL, want 1", n)
	}
	now = now.Add(time.Nanosecond)
	process(b, "ORD")
	if n := srv.count("ORD"); n != 2 {
		t.Errorf("ORD fetched %d times after the TTL expired, want 2", n)
	}
	a.(core.Closer).Close()
	b.(core.Closer).Close()
	b.(core.Closer).Close() // idempotent
}

func TestLookupHTTPNotFound(t *testing.T) {
	srv := newAirportServer(t)
	opts := LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields}
	batch := func() *core.Batch { return originBatch("ORD", "XXX", "ATL", "XXX") }

	def, _ := LookupHTTP("l", opts, flights, nil) // on_miss: null, the default
	out, err := run(t, def, core.Env{}, batch(), batch())
	if err != nil || len(out) != 8 {
		t.Fatalf("null: %d records, %v", len(out), err)
	}
	if v := out[1].vals; v[1].Str() != "XXX" || !v[4].IsNull() || !v[5].IsNull() || !v[6].IsNull() {
		t.Errorf("null: missed record got %v", v)
	}
	if n := srv.count("XXX"); n != 1 {
		t.Errorf("404 fetched %d times, want 1 (404s are cached)", n)
	}
	if st := def.Stats(); st["not_found"] != 1 || st["errors"] != 0 {
		t.Errorf("stats %v", st)
	}
	opts.OnMiss = "empty"
	empty, _ := LookupHTTP("l", opts, flights, nil)
	if out, err = run(t, empty, core.Env{}, batch()); err != nil || len(out) != 4 {
		t.Fatalf("empty: %d records, %v", len(out), err)
	}
	if v := out[1].vals; v[1].Str() != "XXX" || v[4].IsNull() || v[4].Str() != "" || v[5].Int() != 0 || v[6].Bool() {
		t.Errorf("empty: missed record got %v", v)
	}
	opts.OnMiss = ""

	opts.OnMiss = "drop"
	def, _ = LookupHTTP("l", opts, flights, nil)
	out, err = run(t, def, core.Env{}, batch())
	if err != nil || len(out) != 2 || out[1].vals[1].Str() != "ATL" {
		t.Errorf("drop: %v, %v", out, err)
	}
	checkMeta(t, out[1], 2)

	opts.OnMiss = "error"
	p, _ := policyFor(t, core.Skip)
	def, _ = LookupHTTP("l", opts, flights, p)
	out, err = run(t, def, core.Env{}, batch())
	if err != nil || len(out) != 2 || p.Skipped.Load() != 2 {
		t.Errorf("error + skip: %d records, %d skipped, %v", len(out), p.Skipped.Load(), err)
	}
	def, _ = LookupHTTP("l", opts, flights, nil)
	_, err = run(t, def, core.Env{}, batch())
	var re *core.RecordError
	if !errors.As(err, &re) || re.Pos != metaOf(1).Pos || !errors.Is(err, errNotFound) {
		t.Errorf("error + fail: %v", err)
	}
}

func TestLookupHTTPFailures(t *testing.T) {
	srv := newAirportServer(t)
	p, path := policyFor(t, core.DeadLetter)
	// SLOW never answers: without the timeout the batch would hang (go
	// test's -timeout ends it). The other keys answer at once; the timeout
	// leaves them room on a loaded machine.
	const timeout = 500 * time.Millisecond
	def, err := LookupHTTP("l", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields,
		Timeout: timeout}, flights, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, def, core.Env{}, originBatch("ORD", "SLOW", "BAD", "NOTJSON", "WEIRD", "SLOW", "ATL"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].vals[4].Str() != "Chicago" || out[1].vals[4].Str() != "Atlanta" {
		t.Errorf("out %v", out)
	}
	checkMeta(t, out[1], 6)
	if p.DeadLettered.Load() != 5 {
		t.Errorf("%d dead letters, want 5", p.DeadLettered.Load())
	}
	p.Close()
	dead := readFile(t, path)
	for _, want := range []string{"no response within 500ms", "500 Internal Server Error", "not a JSON object", `member \"elevation\": \"high\" is not an int64`} {
		if !strings.Contains(dead, want) {
			t.Errorf("dead letters lack %q:\n%s", want, dead)
		}
	}
	if st := def.Stats(); st["errors"] != 4 || st["requests"] != 6 {
		t.Errorf("stats %v; want 4 errors (SLOW, BAD, NOTJSON, WEIRD) of 6 requests", st)
	}
	// Failures are not cached: the next batch asks again.
	def2, _ := LookupHTTP("l", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields,
		Timeout: timeout}, flights, nil)
	_, err = run(t, def2, core.Env{}, originBatch("SLOW"))
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("fail policy on a timeout: %v", err)
	}
	if n := srv.count("SLOW"); n != 2 {
		t.Errorf("SLOW asked %d times, want 2", n)
	}
}

func TestLookupHTTPEscapesKeys(t *testing.T) {
	srv := newAirportServer(t)
	def, err := LookupHTTP("l", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields[:1]}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, def, core.Env{}, originBatch("A B/C"))
	if err != nil || out[0].vals[4].Str() != "Escaped" {
		t.Errorf("path-escaped key: %v %v", out, err)
	}
	var got string
	q := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query().Get("code")
		fmt.Fprint(w, `{"city": "Q"}`)
	}))
	defer q.Close()
	def, _ = LookupHTTP("l", LookupHTTPOptions{URL: q.URL + "/a?code={key}", Key: "origin", Fields: cityFields[:1]}, flights, nil)
	if _, err := run(t, def, core.Env{}, originBatch("A&B=C")); err != nil || got != "A&B=C" {
		t.Errorf("query-escaped key arrived as %q, %v", got, err)
	}
}

func TestLookupHTTPConstructorErrors(t *testing.T) {
	for _, tt := range []struct {
		opts LookupHTTPOptions
		msg  string
	}{
		{LookupHTTPOptions{URL: "http://127.0.0.1/a", Key: "origin", Fields: cityFields}, "has no {key}"},
		{LookupHTTPOptions{URL: "ftp://127.0.0.1/{key}", Key: "origin", Fields: cityFields}, "expected an http or https URL"},
		{LookupHTTPOptions{URL: "http://127.0.0.1/{key}", Key: "orign", Fields: cityFields}, `no field "orign"`},
		{LookupHTTPOptions{URL: "http://127.0.0.1/{key}", Key: "origin"}, "no fields"},
		{LookupHTTPOptions{URL: "http://127.0.0.1/{key}", Key: "origin", Fields: []core.Field{{Name: "delay", Type: core.Int64}}}, "already in the input"},
		{LookupHTTPOptions{URL: "http://127.0.0.1/{key}", Key: "origin", Fields: cityFields, OnMiss: "ignore"}, "on_miss"},
	} {
		if _, err := LookupHTTP("l", tt.opts, flights, nil); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%+v: err = %v, want %q", tt.opts, err, tt.msg)
		}
	}
}

// Keys stay inside the URL's path segment: a key of dots is not a
// "current" or "parent" directory, a slash is escaped.
func TestLookupHTTPEscapesDotKeys(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()
	def, err := LookupHTTP("cities", LookupHTTPOptions{URL: srv.URL + "/airports/{key}/info", Key: "origin", Fields: cityFields}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, def, core.Env{}, originBatch("..", ".", "a/b", "x.y")); err != nil {
		t.Fatal(err)
	}
	want := []string{"/airports/%2E%2E/info", "/airports/%2E/info", "/airports/a%2Fb/info", "/airports/x.y/info"}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range want {
		found := false
		for _, p := range paths {
			found = found || p == w
		}
		if !found {
			t.Errorf("no request for %s among %v", w, paths)
		}
	}
}

// Redirects: to the same host followed by default; to another host only
// with redirects: any; none with redirects: none. A refused redirect is a
// failed lookup (to the error policy), not a silent miss.
func TestLookupHTTPRedirects(t *testing.T) {
	other := newAirportServer(t)
	var self *httptest.Server
	self = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := strings.TrimPrefix(r.URL.Path, "/r/")
		switch {
		case strings.HasPrefix(r.URL.Path, "/airports/"):
			json.NewEncoder(w).Encode(airportData[strings.TrimPrefix(r.URL.Path, "/airports/")])
		case code == "ORD":
			http.Redirect(w, r, self.URL+"/airports/ORD", http.StatusFound)
		default:
			http.Redirect(w, r, other.URL+"/airports/"+code, http.StatusFound)
		}
	}))
	defer self.Close()
	for _, c := range []struct {
		redirects      string
		ordOK, atlOK   bool
		otherRequested bool
	}{{"", true, false, false}, {"same_host", true, false, false}, {"any", true, true, true}, {"none", false, false, false}} {
		other.total.Store(0)
		errs, err := core.NewErrorPolicy(core.Skip, "")
		if err != nil {
			t.Fatal(err)
		}
		def, err := LookupHTTP("cities", LookupHTTPOptions{URL: self.URL + "/r/{key}", Key: "origin", Fields: cityFields, Redirects: c.redirects}, flights, errs)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run(t, def, core.Env{Errors: errs}, originBatch("ORD", "ATL"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range out {
			got[r.vals[1].Str()] = r.vals[4].Str()
		}
		if ok := got["ORD"] == "Chicago"; ok != c.ordOK {
			t.Errorf("redirects %q: same-host redirect gave %q", c.redirects, got["ORD"])
		}
		if ok := got["ATL"] == "Atlanta"; ok != c.atlOK {
			t.Errorf("redirects %q: other-host redirect gave %q", c.redirects, got["ATL"])
		}
		if (other.total.Load() > 0) != c.otherRequested {
			t.Errorf("redirects %q: the other host got %d requests", c.redirects, other.total.Load())
		}
		wantSkipped := int64(0)
		if !c.ordOK {
			wantSkipped++
		}
		if !c.atlOK {
			wantSkipped++
		}
		if errs.Skipped.Load() != wantSkipped {
			t.Errorf("redirects %q: %d records to the error policy, want %d", c.redirects, errs.Skipped.Load(), wantSkipped)
		}
	}
	if _, err := LookupHTTP("cities", LookupHTTPOptions{URL: self.URL + "/r/{key}", Key: "origin", Fields: cityFields, Redirects: "elsewhere"}, flights, nil); err == nil {
		t.Fatal("redirects elsewhere accepted")
	}
}

// flakyServer answers 503 to the first fails requests of each key, then
// the airport; down makes it answer 500 to everything.
func flakyServer(t *testing.T, fails int) (*httptest.Server, *atomic.Bool, *atomic.Int64) {
	var mu sync.Mutex
	seen := map[string]int{}
	down := &atomic.Bool{}
	total := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		total.Add(1)
		code := strings.TrimPrefix(r.URL.Path, "/airports/")
		mu.Lock()
		seen[code]++
		n := seen[code]
		mu.Unlock()
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		if n <= fails {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(airportData[code])
	}))
	t.Cleanup(srv.Close)
	return srv, down, total
}

// A request that fails in a way that may pass (503) is tried again,
// Retries times, after a backoff doubling each time (scripted sleep); a
// 404 is not retried.
func TestLookupHTTPRetries(t *testing.T) {
	for _, c := range []struct {
		retries, fails int
		found          bool
	}{{2, 2, true}, {2, 3, false}, {0, 1, false}} {
		srv, _, total := flakyServer(t, c.fails)
		var slept []time.Duration
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		def, err := LookupHTTP("cities", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields,
			Retries: c.retries, Backoff: 10 * time.Millisecond, Concurrency: 1,
			Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}, flights, errs)
		if err != nil {
			t.Fatal(err)
		}
		out, err := run(t, def, core.Env{Errors: errs}, originBatch("ORD"))
		if err != nil {
			t.Fatal(err)
		}
		found := len(out) == 1 && out[0].vals[4].Str() == "Chicago"
		wantReq := int64(min(c.fails, c.retries) + 1)
		if found != c.found || total.Load() != wantReq || len(slept) != int(wantReq-1) || def.Stats()["retries"] != wantReq-1 {
			t.Fatalf("%+v: found %v, %d requests (want %d), slept %v, stats %v", c, found, total.Load(), wantReq, slept, def.Stats())
		}
		for i, d := range slept {
			if d != 10*time.Millisecond<<i {
				t.Fatalf("%+v: backoff %d was %v", c, i, d)
			}
		}
		if !c.found && errs.Skipped.Load() != 1 {
			t.Fatalf("%+v: %d records to the error policy", c, errs.Skipped.Load())
		}
	}
}

// The breaker: BreakerFailures failures in a row open it; while open, no
// request is sent and lookups fail at once; after the cooldown (scripted
// clock) one request tries the server, and a success closes it.
func TestLookupHTTPCircuitBreaker(t *testing.T) {
	srv, down, total := flakyServer(t, 0)
	down.Store(true)
	now := time.Unix(1e6, 0)
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	def, err := LookupHTTP("cities", LookupHTTPOptions{URL: srv.URL + "/airports/{key}", Key: "origin", Fields: cityFields,
		BreakerFailures: 3, BreakerCooldown: 5 * time.Second, Concurrency: 1, TTL: time.Nanosecond,
		Now: func() time.Time { return now }}, flights, errs)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := def.New(core.Env{Errors: errs})
	defer op.(core.Closer).Close()
	var found []string
	emit := core.NewEmitter(def.Out, func(b *core.Batch) error {
		for i := range b.Len {
			if c := b.Row(i)[4].Str(); c != "" {
				found = append(found, c)
			}
		}
		b.Release()
		return nil
	}, nil)
	lookup := func(keys ...string) {
		b := originBatch(keys...)
		if err := op.Process(b, emit); err != nil {
			t.Fatal(err)
		}
		emit.Flush()
		b.Release()
	}
	lookup("ORD", "ATL", "SFO", "JFK", "DBN") // 3 failures open it; 2 refused without a request
	if total.Load() != 3 || errs.Skipped.Load() != 5 {
		t.Fatalf("down: %d requests, %d records to the error policy; want 3 and 5", total.Load(), errs.Skipped.Load())
	}
	now = now.Add(4 * time.Second)
	lookup("ORD")
	if total.Load() != 3 {
		t.Fatalf("still open: %d requests", total.Load())
	}
	down.Store(false)
	now = now.Add(2 * time.Second) // past the cooldown: one probe, it succeeds
	lookup("ORD", "ATL")
	if total.Load() != 5 || !slices.Equal(found, []string{"Chicago", "Atlanta"}) {
		t.Fatalf("after the cooldown: %d requests, found %v", total.Load(), found)
	}
}
