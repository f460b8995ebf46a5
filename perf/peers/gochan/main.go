// Command gochan-peers is the naive Go baseline for the peer pipeline
// (scripts/bench.sh peers): a reader goroutine parses the flights CSV export into
// typed records (as streamd's csv source does), a filter goroutine keeps
// delay > 15, a map goroutine adds delay_hours and route, and a sink counts.
// Stages are joined by buffered channels, one record per send.
//
//	gochan-peers -csv /abs/flights.csv [-buf 1024]
//	gochan-peers -gen 3000000 [-buf 1024]
//
// With -gen N the reader generates N records instead (seq, key one of 1000
// strings, value in [0, 1000), ts: streamd's generator), the filter keeps
// value >= 800 and the map adds scaled = value / 60 and tag = key + "-" + key
// (scripts/bench.sh peers generate).
//
// Output, one line: "gochan records_in=N records_out=M seconds=S records_per_s=R".
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

type flight struct {
	Date                time.Time
	Delay, Distance     int64
	Origin, Destination string
}

type out struct {
	flight
	DelayHours float64
	Route      string
}

func main() {
	path := flag.String("csv", "", "the flights CSV export (date,delay,distance,origin,destination with a header)")
	buf := flag.Int("buf", 1024, "capacity of each channel, in records")
	gen := flag.Int64("gen", 0, "generate this many records instead of reading -csv")
	flag.Parse()
	if *gen > 0 {
		generated(*gen, *buf)
		return
	}
	f, err := os.Open(*path)
	if err != nil {
		fail(err)
	}
	defer f.Close()

	start := time.Now()
	in, n, err := pipeline(*buf, func(read chan<- flight) error {
		r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
		r.ReuseRecord = true
		if _, err := r.Read(); err != nil { // header
			return err
		}
		for i := int64(1); ; i++ {
			rec, err := r.Read()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			fl, err := parse(rec)
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			read <- fl
		}
	}, func(fl flight) bool { return fl.Delay > 15 },
		func(fl flight) out { return out{fl, float64(fl.Delay) / 60.0, fl.Origin + "-" + fl.Destination} })
	if err != nil {
		fail(err)
	}
	report(in, n, start)
}

// pipeline runs read -> filter (keep) -> map (mapf) -> a counting sink, one
// goroutine each, joined by channels of capacity buf, one record per send.
// read sends the records and returns when it is done (its error, if any,
// is pipeline's); pipeline returns the records sent and those counted.
func pipeline[In, Out any](buf int, read func(chan<- In) error, keep func(In) bool, mapf func(In) Out) (in, n int64, err error) {
	src := make(chan In, buf)
	kept := make(chan In, buf)
	mapped := make(chan Out, buf)
	readErr := make(chan error, 1)
	go func() { // reader
		defer close(src)
		readErr <- read(src)
	}()
	go func() { // filter
		defer close(kept)
		for r := range src {
			in++
			if keep(r) {
				kept <- r
			}
		}
	}()
	go func() { // map
		defer close(mapped)
		for r := range kept {
			mapped <- mapf(r)
		}
	}()
	for range mapped { // sink
		n++
	}
	return in, n, <-readErr
}

func report(in, n int64, start time.Time) {
	secs := time.Since(start).Seconds()
	fmt.Printf("gochan records_in=%d records_out=%d seconds=%.3f records_per_s=%.0f\n",
		in, n, secs, float64(in)/secs)
}

func parse(rec []string) (fl flight, err error) {
	if len(rec) != 5 {
		return fl, fmt.Errorf("%d fields, want 5", len(rec))
	}
	if fl.Date, err = time.Parse(time.RFC3339, rec[0]); err != nil {
		return
	}
	if fl.Delay, err = strconv.ParseInt(rec[1], 10, 64); err != nil {
		return
	}
	if fl.Distance, err = strconv.ParseInt(rec[2], 10, 64); err != nil {
		return
	}
	fl.Origin, fl.Destination = rec[3], rec[4]
	return fl, nil
}

// rec is a generated record (streamd's generator schema).
type rec struct {
	Seq, Value int64
	Key        string
	TS         time.Time
}

type recOut struct {
	rec
	Scaled float64
	Tag    string
}

// generated runs the generated-records pipeline: generate -> filter
// value >= 800 -> map -> count.
func generated(n int64, buf int) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%06d", i)
	}
	start := time.Now()
	in, out, err := pipeline(buf, func(read chan<- rec) error {
		rnd := rand.New(rand.NewPCG(9, 9))
		t0 := time.Now()
		for i := range n {
			read <- rec{Seq: i, Key: keys[rnd.IntN(len(keys))], Value: rnd.Int64N(1000), TS: t0.Add(time.Duration(i) * time.Millisecond)}
		}
		return nil
	}, func(r rec) bool { return r.Value >= 800 },
		func(r rec) recOut { return recOut{r, float64(r.Value) / 60.0, r.Key + "-" + r.Key} })
	if err != nil {
		fail(err)
	}
	report(in, out, start)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gochan-peers:", err)
	os.Exit(1)
}
