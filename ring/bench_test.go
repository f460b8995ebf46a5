package ring_test

import (
	"context"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamd/ring"
	"streamd/sched"
)

// The benchmarks move b.N items (one op = one item, so ns/op = ns/item)
// from a producer goroutine to a consumer goroutine, each locked to its own
// thread and pinned to its own core where the machine has two usable
// cores. The items are pointers, as the engine moves *core.Batch.
//
//	BenchmarkTransfer/ring-single   Push / Pop, one item per publish
//	BenchmarkTransfer/ring-batch64  PushN of 64 per publish, PopN drains all available
//	BenchmarkTransfer/chan          a buffered Go channel of the same capacity
//	BenchmarkRoundTrip/*            ping-pong: the core-to-core round trip
//	BenchmarkPinning/*              ring-batch64 pinned vs unpinned

const benchCap = 1024

type item struct{ n int64 }

var items [benchCap]item

// pair runs producer and consumer on two workers and times them together.
// With pinned, the workers are pinned to the first two usable CPUs (or run
// unpinned where there are fewer than two, or pinning fails).
func pair(b *testing.B, pinned bool, producer, consumer func()) {
	b.Helper()
	b.ReportAllocs()
	var cores [2]sched.Core
	cpus := benchCPUs(b)
	if pinned && len(cpus) >= 2 {
		cores = [2]sched.Core{sched.OnCPU(cpus[0]), sched.OnCPU(cpus[1])}
	}
	var ready sync.WaitGroup
	start := make(chan struct{})
	ready.Add(2)
	run := func(c sched.Core, f func()) *sched.Worker {
		return sched.StartWorker(context.Background(), sched.WorkerConfig{Core: c, Warn: b.Logf},
			func(context.Context) error {
				ready.Done()
				<-start
				f()
				return nil
			})
	}
	wp, wc := run(cores[0], producer), run(cores[1], consumer)
	ready.Wait()
	b.ResetTimer()
	close(start)
	if err := wp.Wait(); err != nil {
		b.Fatal(err)
	}
	if err := wc.Wait(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if pinned && len(cpus) >= 2 && !(wp.Pinned() && wc.Pinned()) {
		b.Log("pinning failed: ran unpinned")
	}
}

// benchCPUs returns the CPUs for producer and consumer:
// STREAMD_BENCH_CPUS="a,b" when set (scripts/device.sh ring uses it to
// choose two physical cores, or two SMT siblings), else the first two
// usable CPUs.
func benchCPUs(b *testing.B) []int {
	env := os.Getenv("STREAMD_BENCH_CPUS")
	if env == "" {
		return sched.Detect().Usable
	}
	var cpus []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("STREAMD_BENCH_CPUS=%q: %v", env, err)
		}
		cpus = append(cpus, n)
	}
	return cpus
}

func perItem(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/item")
}

func mustRing(b *testing.B, capacity int) *ring.SPSC[*item] {
	r, err := ring.New[*item](capacity)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func ringSingle(b *testing.B, pinned bool) {
	r := mustRing(b, benchCap)
	var got int
	pair(b, pinned, func() {
		for i := 0; i < b.N; i++ {
			if _, err := r.Push(&items[i&(benchCap-1)]); err != nil {
				panic(err)
			}
		}
		r.Close()
	}, func() {
		for {
			if _, err := r.Pop(); err != nil {
				return
			}
			got++
		}
	})
	if got != b.N {
		b.Fatalf("got %d of %d", got, b.N)
	}
	perItem(b)
}

func ringBatch(b *testing.B, pinned bool, batch int) {
	r := mustRing(b, benchCap)
	src := make([]*item, batch)
	for i := range src {
		src[i] = &items[i]
	}
	var got int
	pair(b, pinned, func() {
		for i := 0; i < b.N; i += batch {
			if _, err := r.PushN(src[:min(batch, b.N-i)]); err != nil {
				panic(err)
			}
		}
		r.Close()
	}, func() {
		dst := make([]*item, benchCap)
		for {
			n, err := r.PopN(dst)
			if err != nil {
				return
			}
			got += n
		}
	})
	if got != b.N {
		b.Fatalf("got %d of %d", got, b.N)
	}
	perItem(b)
}

func chanSingle(b *testing.B, pinned bool) {
	ch := make(chan *item, benchCap)
	var got int
	pair(b, pinned, func() {
		for i := 0; i < b.N; i++ {
			ch <- &items[i&(benchCap-1)]
		}
		close(ch)
	}, func() {
		for range ch {
			got++
		}
	})
	if got != b.N {
		b.Fatalf("got %d of %d", got, b.N)
	}
	perItem(b)
}

func BenchmarkTransfer(b *testing.B) {
	b.Run("ring-single", func(b *testing.B) { ringSingle(b, true) })
	b.Run("ring-batch64", func(b *testing.B) { ringBatch(b, true, 64) })
	b.Run("chan", func(b *testing.B) { chanSingle(b, true) })
}

func BenchmarkPinning(b *testing.B) {
	b.Run("batch64-pinned", func(b *testing.B) { ringBatch(b, true, 64) })
	b.Run("batch64-unpinned", func(b *testing.B) { ringBatch(b, false, 64) })
	b.Run("single-pinned", func(b *testing.B) { ringSingle(b, true) })
	b.Run("single-unpinned", func(b *testing.B) { ringSingle(b, false) })
}

// padded keeps each flag of the atomic ping-pong on its own cache lines.
type padded struct {
	_ [128]byte
	v atomic.Int64
	_ [128]byte
}

func perRoundTrip(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/roundtrip")
}

// spinUntil waits for f, yielding the P now and then so that an unpinned
// run on an oversubscribed machine still makes progress.
func spinUntil(f func() bool) {
	for i := 1; !f(); i++ {
		if i%4096 == 0 {
			runtimeGosched()
		}
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	// atomic: the bare machine, one cache line each way and back.
	b.Run("atomic", func(b *testing.B) {
		var ping, pong padded
		pair(b, true, func() {
			for i := int64(1); i <= int64(b.N); i++ {
				ping.v.Store(i)
				spinUntil(func() bool { return pong.v.Load() == i })
			}
		}, func() {
			for i := int64(1); i <= int64(b.N); i++ {
				spinUntil(func() bool { return ping.v.Load() == i })
				pong.v.Store(i)
			}
		})
		perRoundTrip(b)
	})
	b.Run("ring", func(b *testing.B) {
		there, back := mustRing(b, 2), mustRing(b, 2)
		pair(b, true, func() {
			for i := 0; i < b.N; i++ {
				there.Push(&items[0])
				back.Pop()
			}
		}, func() {
			for i := 0; i < b.N; i++ {
				v, _ := there.Pop()
				back.Push(v)
			}
		})
		perRoundTrip(b)
	})
	b.Run("chan", func(b *testing.B) {
		there, back := make(chan *item, 1), make(chan *item, 1)
		pair(b, true, func() {
			for i := 0; i < b.N; i++ {
				there <- &items[0]
				<-back
			}
		}, func() {
			for i := 0; i < b.N; i++ {
				back <- <-there
			}
		})
		perRoundTrip(b)
	})
}

// BenchmarkSharedCore moves batches of 8 items through a 64-slot ring
// between two plain goroutines on one P (GOMAXPROCS 1): the two stages
// share a core, as they do when a job has more stages than cores. With
// the default yield budget a blocked side yields its thread for 100 µs
// while the peer it waits for cannot run (it needs the P the yielder
// holds); with 0 (what the runtime sets there: core/runtime spareCore)
// it spins, then parks and gives the P to the peer.
//
//	BenchmarkSharedCore/yield-100us   the default budget
//	BenchmarkSharedCore/yield-0       spin, then park
func BenchmarkSharedCore(b *testing.B) {
	for _, c := range []struct {
		name  string
		yield time.Duration
	}{{"yield-100us", 100 * time.Microsecond}, {"yield-0", 0}} {
		b.Run(c.name, func(b *testing.B) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
			b.ReportAllocs()
			r := mustRing(b, 64)
			r.SetYield(c.yield)
			src := make([]*item, 8)
			for i := range src {
				src[i] = &items[i]
			}
			done := make(chan int)
			go func() {
				dst := make([]*item, 64)
				got := 0
				for {
					n, err := r.PopN(dst)
					if err != nil {
						done <- got
						return
					}
					got += n
				}
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(src) {
				if _, err := r.PushN(src[:min(len(src), b.N-i)]); err != nil {
					b.Fatal(err)
				}
			}
			r.Close()
			if got := <-done; got != b.N {
				b.Fatalf("got %d of %d", got, b.N)
			}
			perItem(b)
		})
	}
}
