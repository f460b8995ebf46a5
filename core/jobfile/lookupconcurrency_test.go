package jobfile

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateServer is a loopback JSON service for lookup_http that counts the
// requests in flight. GET /k/{key} answers {"n": len(key), "up": KEY} for
// every key but those starting with "miss" (404). Each request waits
// until the gate is reached — gate requests in flight at once — or hold
// has passed, so a client that sends gate requests at a time meets them
// all in flight, and one that sends fewer waits hold per round; then it
// waits linger more, so that a client sending more than gate at a time
// is seen with more in flight.
type gateServer struct {
	*httptest.Server
	gate         int
	hold, linger time.Duration

	mu       sync.Mutex
	inFlight int
	peak     int
	open     chan struct{} // closed when inFlight first reaches gate
}

func newGateServer(t *testing.T, gate int, hold, linger time.Duration) *gateServer {
	s := &gateServer{gate: gate, hold: hold, linger: linger, open: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.inFlight++
		s.peak = max(s.peak, s.inFlight)
		if s.inFlight == s.gate {
			select {
			case <-s.open:
			default:
				close(s.open)
			}
		}
		s.mu.Unlock()
		select {
		case <-s.open:
		case <-time.After(s.hold):
		}
		time.Sleep(s.linger)
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
		key := strings.TrimPrefix(r.URL.Path, "/k/")
		if strings.HasPrefix(key, "miss") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"n": %d, "up": %q}`, len(key), strings.ToUpper(key))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *gateServer) maxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// lookupJob is a job that looks each record's key up at url with the
// given lookup_http concurrency line ("" for none), in a region of
// channels channels, and writes out/out.csv.
func lookupJob(url, concurrency string, channels int) string {
	return fmt.Sprintf(`source:
  csv:
    path: in.csv
    columns: {k: string, v: int64}
region:
  channels: %d
  ops:
    - lookup_http:
        url: %s/k/{key}
        key: k
        fields: {n: int64, up: string}
        on_miss: empty
%ssink:
  csv:
    path: out/out.csv
`, channels, url, concurrency)
}

// keysCSV is a CSV file of n records over distinct keys k000, k001, …,
// with every seventh key a miss.
func keysCSV(n int) string {
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range n {
		if i%7 == 3 {
			fmt.Fprintf(&b, "miss%03d,%d\n", i, i)
		} else {
			fmt.Fprintf(&b, "k%03d,%d\n", i, i)
		}
	}
	return b.String()
}

// lookup_http's concurrency reaches the operator: with one channel, a
// batch of 96 distinct keys is fetched with exactly that many requests in
// flight (absent: 8).
func TestLookupHTTPConcurrencyKey(t *testing.T) {
	for _, c := range []struct {
		line string
		want int
	}{{"", 8}, {"        concurrency: 1\n", 1}, {"        concurrency: 32\n", 32}} {
		srv := newGateServer(t, c.want, 300*time.Millisecond, 2*time.Millisecond)
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), keysCSV(96))
		if _, err := runJobFile(t, dir, lookupJob(srv.URL, c.line, 1)); err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if got := srv.maxInFlight(); got != c.want {
			t.Errorf("%q: %d requests in flight at most, want %d", c.line, got, c.want)
		}
		out := readFile(t, filepath.Join(dir, "out", "out.csv"))
		if lines := strings.Count(out, "\n"); lines != 97 || !strings.Contains(out, "\nk095,95,4,K095\n") || !strings.Contains(out, "\nmiss003,3,0,\n") {
			t.Errorf("%q: %d lines:\n%s", c.line, lines, out)
		}
	}
}

// Metamorphic: the output does not depend on lookup_http's concurrency.
// Concurrency 1 and 16, over 2 channels, give byte-identical output (and
// 16 has several requests in flight).
func TestLookupHTTPConcurrencySameOutput(t *testing.T) {
	in := keysCSV(600)
	var want string
	for _, conc := range []int{1, 16} {
		srv := newGateServer(t, 1, 0, time.Millisecond) // answers after 1 ms
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), in)
		if _, err := runJobFile(t, dir, lookupJob(srv.URL, fmt.Sprintf("        concurrency: %d\n", conc), 2)); err != nil {
			t.Fatalf("concurrency %d: %v", conc, err)
		}
		got := readFile(t, filepath.Join(dir, "out", "out.csv"))
		if conc == 1 {
			want = got
			if !strings.HasPrefix(got, "k,v,n,up\nk000,0,4,K000\nk001,1,4,K001\nk002,2,4,K002\nmiss003,3,0,\n") || strings.Count(got, "\n") != 601 {
				t.Fatalf("concurrency 1: output\n%.300s", got)
			}
			continue
		}
		if got != want {
			t.Errorf("concurrency %d: output differs from concurrency 1's", conc)
		}
		if p := srv.maxInFlight(); p < 2 {
			t.Errorf("concurrency %d: at most %d request in flight", conc, p)
		}
	}
}
