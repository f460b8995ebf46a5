package sched

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// withSys replaces the kernel seam for one test.
func withSys(t *testing.T, f func(*osCalls)) {
	t.Helper()
	saved := sys
	f(&sys)
	t.Cleanup(func() { sys = saved })
}

// logBuffer is a slog logger that records its output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// TestPinnedWorkerAffinity pins a worker to each usable CPU in turn and
// checks, from inside the loop, that its thread may run only there.
func TestPinnedWorkerAffinity(t *testing.T) {
	cpus := Detect()
	for _, cpu := range cpus.Usable {
		var got []int
		var gerr error
		w := StartWorker(context.Background(), WorkerConfig{Name: "probe", Core: OnCPU(cpu)},
			func(context.Context) error {
				got, gerr = ThreadAffinity()
				return gerr
			})
		if err := w.Wait(); err != nil {
			t.Fatalf("cpu %d: %v", cpu, err)
		}
		if !w.Pinned() {
			t.Fatalf("cpu %d: worker not pinned", cpu)
		}
		if !reflect.DeepEqual(got, []int{cpu}) {
			t.Fatalf("cpu %d: thread affinity %v", cpu, got)
		}
	}
}

// TestUnpinRestores checks that unpin gives the thread back its mask.
func TestUnpinRestores(t *testing.T) {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // keep the thread after unpin to inspect it
		defer runtime.UnlockOSThread()
		if onMainThread() {
			done <- nil // nothing to test here
			return
		}
		before, _ := ThreadAffinity()
		unpin, err := Pin(before[len(before)-1])
		if err != nil {
			done <- err
			return
		}
		during, _ := ThreadAffinity()
		unpin()
		unpin() // idempotent
		after, _ := ThreadAffinity()
		if len(during) != 1 || !reflect.DeepEqual(before, after) {
			done <- errors.New("mask not restored")
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPinErrors(t *testing.T) {
	if _, err := Pin(-1); err == nil {
		t.Fatal("Pin(-1): no error")
	}
	if _, err := Pin(1 << 20); err == nil {
		t.Fatal("Pin(1<<20): no error")
	}
	withSys(t, func(s *osCalls) { s.gettid = s.getpid })
	unpin, err := Pin(0)
	if !errors.Is(err, ErrMainThread) {
		t.Fatalf("Pin on the main thread: %v", err)
	}
	unpin()
}

// TestPinFailureFallback injects a failing sched_setaffinity: the worker
// still runs its loop, unpinned, and a warning is logged once.
func TestPinFailureFallback(t *testing.T) {
	withSys(t, func(s *osCalls) {
		s.setaffinity = func(int, []int) error { return syscall.EPERM }
	})
	var log logBuffer
	a := NewAllocator([]int{0, 1, 2}, AllocatorConfig{Logger: log.logger()})
	var ran atomic.Int32
	var ws []*Worker
	for i := 0; i < 3; i++ {
		ws = append(ws, a.Start(context.Background(), "w", func(context.Context) error {
			ran.Add(1)
			return nil
		}))
	}
	for _, w := range ws {
		if err := w.Wait(); err != nil {
			t.Fatal(err)
		}
		if w.Pinned() {
			t.Fatal("worker claims to be pinned")
		}
	}
	if ran.Load() != 3 {
		t.Fatalf("%d loops ran", ran.Load())
	}
	lines := log.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "operation not permitted") {
		t.Fatalf("log: %q", lines)
	}
	if a.Free() != 3 {
		t.Fatalf("Free = %d after all workers ended", a.Free())
	}
}

func TestWorkerStopErrorPanic(t *testing.T) {
	a := NewAllocator(Detect().Usable, AllocatorConfig{})
	free := a.Free()

	w := a.Start(context.Background(), "stop", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	w.Stop()
	if err := w.Wait(); err != nil {
		t.Fatalf("stopped worker: %v", err)
	}

	boom := errors.New("boom")
	w = a.Start(context.Background(), "fail", func(context.Context) error { return boom })
	if err := w.Wait(); !errors.Is(err, boom) {
		t.Fatalf("failing worker: %v", err)
	}

	w = a.Start(context.Background(), "panic", func(context.Context) error { panic(boom) })
	err := w.Wait()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Worker != "panic" || !errors.Is(err, boom) || len(pe.Stack) == 0 {
		t.Fatalf("panicking worker: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	w = a.Start(ctx, "parent", func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	cancel()
	<-w.Done()
	if a.Free() != free {
		t.Fatalf("Free = %d, want %d: a core was not released", a.Free(), free)
	}
}

func TestUnpinnedWorker(t *testing.T) {
	w := StartWorker(context.Background(), WorkerConfig{Name: "u"}, func(context.Context) error { return nil })
	if err := w.Wait(); err != nil || w.Pinned() || w.Core().Pinned() || w.Core().CPU() != -1 {
		t.Fatalf("unpinned worker: %v pinned=%v core=%v", err, w.Pinned(), w.Core())
	}
}

func TestAllocatorReserve(t *testing.T) {
	var log logBuffer
	a := NewAllocator([]int{0, 1}, AllocatorConfig{Reserved: 3, Logger: log.logger()})
	if len(a.Reserved()) != 1 || a.Reserved()[0] != OnCPU(0) || a.Size() != 1 {
		t.Fatalf("reserved %v size %d", a.Reserved(), a.Size())
	}
	c1, ok1 := a.Lease()
	c2, ok2 := a.Lease()
	c3, ok3 := a.Lease()
	if c1 != OnCPU(1) || !ok1 || ok2 || ok3 || c2.Pinned() || c3.String() != "unpinned" {
		t.Fatalf("leases %v %v %v %v %v %v", c1, ok1, c2, ok2, c3, ok3)
	}
	if n := len(log.lines()); n != 1 {
		t.Fatalf("%d warnings, want 1: %q", n, log.lines())
	}
	a.Release(c2) // unpinned: no-op
	a.Release(c1)
	defer func() {
		if recover() == nil {
			t.Fatal("double release did not panic")
		}
	}()
	a.Release(c1)
}

// TestAllocatorProperty: random lease/release sequences never lease one
// core twice, lease the lowest free core, and warn at most once.
func TestAllocatorProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "cpus")
		reserved := rapid.IntRange(0, 4).Draw(t, "reserved")
		var log logBuffer
		cpus := make([]int, n)
		for i := range cpus {
			cpus[i] = 2 * i // sparse ids
		}
		a := NewAllocator(cpus, AllocatorConfig{Reserved: reserved, Logger: log.logger()})
		held := map[int]bool{}
		var leases []Core
		t.Repeat(map[string]func(*rapid.T){
			"lease": func(t *rapid.T) {
				c, ok := a.Lease()
				if ok != c.Pinned() {
					t.Fatalf("ok %v for %v", ok, c)
				}
				if len(held) < a.Size() != ok {
					t.Fatalf("ok = %v with %d/%d held", ok, len(held), a.Size())
				}
				if ok {
					if held[c.CPU()] {
						t.Fatalf("%v leased twice", c)
					}
					for _, r := range a.Reserved() {
						if r == c {
							t.Fatalf("reserved %v leased", c)
						}
					}
					for _, cpu := range cpus[len(a.Reserved()):] {
						if cpu < c.CPU() && !held[cpu] {
							t.Fatalf("leased %v while cpu %d was free", c, cpu)
						}
					}
					held[c.CPU()] = true
				}
				leases = append(leases, c)
			},
			"release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("nothing leased")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "i")
				c := leases[i]
				leases = append(leases[:i], leases[i+1:]...)
				a.Release(c)
				delete(held, c.CPU())
			},
			"": func(t *rapid.T) {
				if a.Free() != a.Size()-len(held) {
					t.Fatalf("Free %d, size %d, held %d", a.Free(), a.Size(), len(held))
				}
				if len(log.lines()) > 1 {
					t.Fatalf("warned %d times", len(log.lines()))
				}
			},
		})
	})
}

// TestAllocatorConcurrent leases from many goroutines at once and checks
// that no two holders ever hold one core.
func TestAllocatorConcurrent(t *testing.T) {
	a := NewAllocator([]int{0, 1, 2, 3}, AllocatorConfig{Logger: slog.New(slog.DiscardHandler)})
	var owners [4]atomic.Int32
	var wg sync.WaitGroup
	for g := 1; g <= 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				c, ok := a.Lease()
				if !ok {
					continue
				}
				if !owners[c.CPU()].CompareAndSwap(0, int32(g)) {
					t.Errorf("%v leased twice", c)
					return
				}
				runtime.Gosched()
				owners[c.CPU()].Store(0)
				a.Release(c)
			}
		}()
	}
	wg.Wait()
	if a.Free() != 4 {
		t.Fatalf("Free = %d", a.Free())
	}
}
