package ring

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropModel drives one ring from one goroutine with random try
// operations and compares every result with a plain slice queue.
func TestPropModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(2, 40).Draw(t, "capacity")
		r, err := New[int](capacity)
		if err != nil {
			t.Fatal(err)
		}
		c := r.Cap()
		var model []int
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"TryPush": func(t *rapid.T) {
				ok := r.TryPush(next)
				if ok != (len(model) < c) {
					t.Fatalf("TryPush = %v with %d/%d", ok, len(model), c)
				}
				if ok {
					model = append(model, next)
					next++
				}
			},
			"TryPushN": func(t *rapid.T) {
				k := rapid.IntRange(0, 2*c).Draw(t, "k")
				vs := make([]int, k)
				for i := range vs {
					vs[i] = next + i
				}
				n := r.TryPushN(vs)
				if want := min(k, c-len(model)); n != want {
					t.Fatalf("TryPushN(%d) = %d, want %d", k, n, want)
				}
				model = append(model, vs[:n]...)
				next += n
			},
			"TryPop": func(t *rapid.T) {
				v, ok := r.TryPop()
				if ok != (len(model) > 0) {
					t.Fatalf("TryPop ok = %v with %d queued", ok, len(model))
				}
				if ok {
					if v != model[0] {
						t.Fatalf("TryPop = %d, want %d", v, model[0])
					}
					model = model[1:]
				}
			},
			"TryPopN": func(t *rapid.T) {
				k := rapid.IntRange(0, 2*c).Draw(t, "k")
				dst := make([]int, k)
				n := r.TryPopN(dst)
				if want := min(k, len(model)); n != want {
					t.Fatalf("TryPopN(%d) = %d, want %d", k, n, want)
				}
				for i := range n {
					if dst[i] != model[i] {
						t.Fatalf("TryPopN[%d] = %d, want %d", i, dst[i], model[i])
					}
				}
				model = model[n:]
			},
			"": func(t *rapid.T) {
				if r.Len() != len(model) {
					t.Fatalf("Len = %d, want %d", r.Len(), len(model))
				}
				if r.Pushed()-r.Popped() != uint64(len(model)) {
					t.Fatalf("Pushed-Popped = %d, want %d", r.Pushed()-r.Popped(), len(model))
				}
			},
		})
	})
}

// op is one step of a side's random program.
type op struct {
	kind  int // 0 try single, 1 try batch, 2 blocking single, 3 blocking batch
	size  int // batch size
	pause int // 0 none, 1 runtime.Gosched, 2 short busy loop
}

func (o op) String() string { return fmt.Sprintf("{%d %d %d}", o.kind, o.size, o.pause) }

var opGen = rapid.Custom(func(t *rapid.T) op {
	return op{
		kind:  rapid.IntRange(0, 3).Draw(t, "kind"),
		size:  rapid.IntRange(1, 70).Draw(t, "size"),
		pause: rapid.IntRange(0, 2).Draw(t, "pause"),
	}
})

func (o op) wait() {
	switch o.pause {
	case 1:
		runtime.Gosched()
	case 2:
		x := 0
		for i := 0; i < 200; i++ {
			x += i
		}
		_ = x
	}
}

// TestPropConcurrent runs a producer and a consumer on two goroutines, each
// cycling through its own random program of single, batch, try and blocking
// operations, and checks that the consumer receives 0..n-1 in order: no
// loss, no duplication, FIFO, and clean close.
func TestPropConcurrent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(2, 64).Draw(t, "capacity")
		n := rapid.IntRange(0, 3000).Draw(t, "n")
		prog := rapid.SliceOfN(opGen, 1, 12).Draw(t, "producer")
		cons := rapid.SliceOfN(opGen, 1, 12).Draw(t, "consumer")
		r, err := New[int](capacity)
		if err != nil {
			t.Fatal(err)
		}
		r.SetYield(yieldGen.Draw(t, "yield"))
		perr := make(chan error, 1)
		go func() { perr <- produce(r, n, prog) }()
		got := consume(r, cons)
		if err := <-perr; err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("received %d values, want %d", len(got), n)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("value %d = %d", i, v)
			}
		}
		if r.Len() != 0 {
			t.Fatalf("Len = %d after drain", r.Len())
		}
	})
}

// yieldGen draws a side's yield budget: the default, or 0 as the runtime
// sets it where stages share cores (spin, then park at once: the parking
// protocol runs on almost every wait).
var yieldGen = rapid.SampledFrom([]time.Duration{yieldFor, 0})

// maxTryFails bounds a run of failed try operations: then the side uses the
// blocking variant once. Without it a program made only of try operations
// busy-waits, and on a machine with fewer free cores than spinning threads
// each handoff costs an OS time slice.
const maxTryFails = 64

func produce(r *SPSC[int], n int, prog []op) error {
	buf := make([]int, 70)
	fails := 0
	for i, step := 0, 0; i < n; step++ {
		o := prog[step%len(prog)]
		k := min(o.size, n-i)
		for j := range k {
			buf[j] = i + j
		}
		if fails > maxTryFails {
			o.kind += 2 // fall back to the blocking variant
		}
		switch o.kind {
		case 0:
			if r.TryPush(i) {
				i++
				fails = 0
			} else {
				fails++
			}
		case 1:
			if m := r.TryPushN(buf[:k]); m > 0 {
				i += m
				fails = 0
			} else {
				fails++
			}
		case 2:
			if _, err := r.Push(i); err != nil {
				return err
			}
			i++
			fails = 0
		case 3:
			if _, err := r.PushN(buf[:k]); err != nil {
				return err
			}
			i += k
			fails = 0
		}
		o.wait()
	}
	r.Close()
	return nil
}

func consume(r *SPSC[int], prog []op) []int {
	var got []int
	dst := make([]int, 70)
	fails := 0
	for step := 0; ; step++ {
		o := prog[step%len(prog)]
		if fails > maxTryFails {
			o.kind += 2
		}
		fails++
		var err error
		switch o.kind {
		case 0:
			if v, ok := r.TryPop(); ok {
				got = append(got, v)
				fails = 0
			} else if r.Closed() && r.Len() == 0 {
				// Closed is stored after the last publish, so Len sees it.
				return got
			}
		case 1:
			if k := r.TryPopN(dst[:o.size]); k > 0 {
				got = append(got, dst[:k]...)
				fails = 0
			} else if r.Closed() && r.Len() == 0 {
				return got
			}
		case 2:
			var v int
			if v, err = r.Pop(); err == nil {
				got = append(got, v)
			}
			fails = 0
		case 3:
			var k int
			k, err = r.PopN(dst[:o.size])
			got = append(got, dst[:k]...)
			fails = 0
		}
		if errors.Is(err, ErrClosed) {
			return got
		}
		if err != nil {
			panic(err)
		}
		o.wait()
	}
}

// TestPropCancel cancels the ring from the consumer side after a random
// number of values while the producer keeps pushing: both sides must return
// (no goroutine stays parked) and the consumer must have seen a prefix of
// the stream in order.
func TestPropCancel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(2, 16).Draw(t, "capacity")
		stopAfter := rapid.IntRange(0, 500).Draw(t, "stopAfter")
		batch := rapid.IntRange(1, 20).Draw(t, "batch")
		r, err := New[int](capacity)
		if err != nil {
			t.Fatal(err)
		}
		r.SetYield(yieldGen.Draw(t, "yield"))
		perr := make(chan error, 1)
		go func() {
			buf := make([]int, batch)
			for i := 0; ; i += batch {
				for j := range buf {
					buf[j] = i + j
				}
				if _, err := r.PushN(buf); err != nil {
					perr <- err
					return
				}
			}
		}()
		for i := 0; i < stopAfter; i++ {
			v, err := r.Pop()
			if err != nil || v != i {
				t.Fatalf("Pop = %d, %v; want %d", v, err, i)
			}
		}
		r.Cancel()
		if err := <-perr; !errors.Is(err, ErrCanceled) {
			t.Fatalf("producer ended with %v, want ErrCanceled", err)
		}
		if _, err := r.Pop(); !errors.Is(err, ErrCanceled) {
			t.Fatalf("Pop after Cancel: %v", err)
		}
	})
}
