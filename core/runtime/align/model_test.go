package align

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// A driver of 1 to 4 inputs takes random steps: data and watermarks on the
// input Next gives, barriers of the next epoch on any input that is
// neither held nor ended, ends, idleness. Whatever the interleaving:
// Next never gives a held or ended input and data from a held input is
// refused; each epoch completes once, exactly when every input has
// delivered it or ended; the output watermark never goes back, and
// without idleness it is the largest minimum so far over the live inputs
// (none while one of them has none).
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "inputs")
		idle := rapid.Bool().Draw(t, "idle")
		a := New(n)
		wm := make([]int64, n)
		ended := make([]bool, n)
		delivered := make([]bool, n) // the epoch aligning
		for i := range wm {
			wm[i] = NoTime
		}
		epoch, out := int64(1), int64(NoTime)
		liveAll := func(f func(i int) bool) bool {
			for i := range n {
				if !ended[i] && !f(i) {
					return false
				}
			}
			return true
		}
		for step := range 200 {
			switch rapid.IntRange(0, 9).Draw(t, "event") {
			case 0, 1, 2: // data and a watermark on the input Next gives
				i, ok := a.Next()
				if !ok {
					if !liveAll(func(int) bool { return false }) {
						t.Fatalf("step %d: Next gives nothing while an input is live", step)
					}
					continue
				}
				if ended[i] || delivered[i] {
					t.Fatalf("step %d: Next gives input %d (ended %v, held %v)", step, i, ended[i], delivered[i])
				}
				ts := rapid.Int64Range(0, 1000).Draw(t, "t")
				if _, err := a.Data(i, ts); err != nil {
					t.Fatal(err)
				}
				if err := a.Watermark(i, ts); err != nil {
					t.Fatal(err)
				}
				wm[i] = max(wm[i], ts)
			case 3, 4, 5: // a barrier
				i := rapid.IntRange(0, n-1).Draw(t, "in")
				done, err := a.Barrier(i, epoch)
				switch {
				case ended[i] && !errors.Is(err, ErrEnded), delivered[i] && !errors.Is(err, ErrEpoch):
					t.Fatalf("step %d: barrier %d on input %d (ended %v, held %v): %v", step, epoch, i, ended[i], delivered[i], err)
				case ended[i] || delivered[i]:
					continue
				case err != nil:
					t.Fatal(err)
				}
				delivered[i] = true
				if want := liveAll(func(j int) bool { return delivered[j] }); done != want {
					t.Fatalf("step %d: barrier %d complete %v, want %v", step, epoch, done, want)
				}
				if done {
					epoch, delivered = epoch+1, make([]bool, n)
				}
			case 6: // data on a held input is refused
				for i := range n {
					if delivered[i] && !ended[i] {
						if !a.Held(i) {
							t.Fatalf("step %d: input %d delivered %d and is not held", step, i, epoch)
						}
						if _, err := a.Data(i, 0); !errors.Is(err, ErrHeld) {
							t.Fatalf("step %d: data on held input %d: %v", step, i, err)
						}
					}
				}
			case 7, 8: // an end
				i := rapid.IntRange(0, n-1).Draw(t, "in")
				if ended[i] || delivered[i] {
					if _, err := a.End(i); !errors.Is(err, ErrEnded) && !errors.Is(err, ErrHeld) {
						t.Fatalf("step %d: input %d ended (ended %v, held %v): %v", step, i, ended[i], delivered[i], err)
					}
					continue
				}
				e, err := a.End(i)
				if err != nil {
					t.Fatal(err)
				}
				ended[i] = true
				anyDelivered := false
				for j := range n {
					anyDelivered = anyDelivered || delivered[j]
				}
				want := int64(0)
				if anyDelivered && liveAll(func(j int) bool { return delivered[j] }) {
					want = epoch
				}
				if e != want {
					t.Fatalf("step %d: input %d's end completes %d, want %d", step, i, e, want)
				}
				if e != 0 {
					epoch, delivered = epoch+1, make([]bool, n)
				}
			case 9:
				if idle {
					a.Idle(rapid.IntRange(0, n-1).Draw(t, "in"))
				}
			}
			got, ok := a.Output()
			if ok != (got != NoTime) || got < out {
				t.Fatalf("step %d: output %d %v after %d", step, got, ok, out)
			}
			if !idle {
				want := out // no live input, or one without a watermark (NoTime)
				if m, live := liveMin(wm, ended); live && m != NoTime {
					want = max(out, m)
				}
				if got != want {
					t.Fatalf("step %d: output %d, want %d (the live inputs' %v)", step, got, want, wm)
				}
			}
			out = got
		}
	})
}

// liveMin is the minimum of wm over the inputs not ended, and whether
// there is one.
func liveMin(wm []int64, ended []bool) (int64, bool) {
	m, live := int64(0), false
	for i, w := range wm {
		if !ended[i] && (!live || w < m) {
			m, live = w, true
		}
	}
	return m, live
}
