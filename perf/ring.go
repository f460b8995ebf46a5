package perf

import (
	"context"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"streamd/core"
	"streamd/ring"
)

func init() {
	Register(Workload{
		Name: "ring",
		Description: "batch pointers from one goroutine to another: ring.SPSC (capacity 64), then a Go channel of the same " +
			"capacity, each for --count transfers (records in/out count both) or 45 % of --duration; latency sampled every 64th transfer",
		Run:    runRing,
		NoRate: true,
	})
}

const (
	ringCap      = 64
	ringPool     = 1024 // batches cycled through; > ringCap so none is reused while queued
	ringStampGap = 64   // one transfer in ringStampGap carries a stamp
	ringDefault  = 10_000_000
)

// transport moves batch pointers: push blocks while full, pop while empty;
// pop returns false once close has been called and everything was taken.
type transport struct {
	push  func(*core.Batch)
	close func()
	pop   func() (*core.Batch, bool)
}

func spscTransport() transport {
	r, _ := ring.New[*core.Batch](ringCap)
	return transport{
		push:  func(b *core.Batch) { r.Push(b) },
		close: r.Close,
		pop: func() (*core.Batch, bool) {
			b, err := r.Pop()
			return b, err == nil
		},
	}
}

func chanTransport() transport {
	c := make(chan *core.Batch, ringCap)
	return transport{
		push:  func(b *core.Batch) { c <- b },
		close: func() { close(c) },
		pop: func() (*core.Batch, bool) {
			b, ok := <-c
			return b, ok
		},
	}
}

// runRing times ring.SPSC, then a channel, each for opt.Count transfers or
// for a little under half of opt.Duration (10 M transfers if neither).
// The ring's latency goes to rec; the channel's, and both rates, to Extra.
func runRing(ctx context.Context, opt Options, rec *Recorder) error {
	n := opt.Count
	phase := opt.Duration * 45 / 100
	if n == 0 && phase <= 0 {
		n = ringDefault
	}
	pool := make([]*core.Batch, ringPool)
	for i := range pool {
		pool[i] = &core.Batch{}
	}
	ringN, ringT := transfer(ctx, spscTransport(), pool, n, phase, rec, rec.hist)
	chanHist := hdrhistogram.New(histMinUs, histMaxUs, histDigits)
	chanN, chanT := transfer(ctx, chanTransport(), pool, n, phase, rec, chanHist)
	rr, cr := float64(ringN)/ringT.Seconds(), float64(chanN)/chanT.Seconds()
	rec.Set("ring_transfers_per_s", rr)
	rec.Set("chan_transfers_per_s", cr)
	rec.Set("ring_vs_chan_speedup", rr/cr)
	rec.Set("chan_latency_p50_us", float64(chanHist.ValueAtQuantile(50)))
	rec.Set("chan_latency_p99_us", float64(chanHist.ValueAtQuantile(99)))
	return ctx.Err()
}

// transfer pushes pool's batches round-robin through t from a new
// goroutine, n of them (0: no limit) or until phase has passed (0: no
// limit) or ctx is done, pops them on this one, and returns the number
// moved and the time taken. Every ringStampGap-th batch is stamped with
// its push time; the pop side records its latency into h.
func transfer(ctx context.Context, t transport, pool []*core.Batch, n int64, phase time.Duration, rec *Recorder, h *hdrhistogram.Histogram) (int64, time.Duration) {
	var stop atomic.Bool
	if phase > 0 {
		tm := time.AfterFunc(phase, func() { stop.Store(true) })
		defer tm.Stop()
	}
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	start := time.Now()
	go func() {
		defer t.close()
		for i := int64(0); (n == 0 || i < n) && (i%1024 != 0 || !stop.Load()); i++ {
			b := pool[i%ringPool]
			b.Stamp = 0
			if i%ringStampGap == 0 {
				b.Stamp = time.Now().UnixNano()
			}
			t.push(b)
		}
	}()
	var got, counted int64
	for {
		b, ok := t.pop()
		if !ok {
			break
		}
		if b.Stamp != 0 {
			us := (time.Now().UnixNano() - b.Stamp) / 1000
			h.RecordValue(min(max(us, histMinUs), histMaxUs))
		}
		got++
		if got-counted == 1024 {
			rec.Add(1024)
			counted = got
		}
	}
	rec.Add(got - counted)
	return got, time.Since(start)
}
