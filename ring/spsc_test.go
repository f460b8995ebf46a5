package ring

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func mustNew[T any](t testing.TB, capacity int) *SPSC[T] {
	t.Helper()
	r, err := New[T](capacity)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewCapacity(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{2, 2}, {3, 4}, {4, 4}, {5, 8}, {1000, 1024}, {1024, 1024}, {MaxCap, MaxCap},
	} {
		// Zero-size values: a ring of MaxCap ints would allocate 8 GiB.
		r := mustNew[struct{}](t, tc.in)
		if r.Cap() != tc.want {
			t.Errorf("New(%d).Cap() = %d, want %d", tc.in, r.Cap(), tc.want)
		}
	}
	for _, bad := range []int{-1, 0, 1, MaxCap + 1} {
		if _, err := New[int](bad); err == nil {
			t.Errorf("New(%d): no error", bad)
		}
	}
}

// TestLayout checks that the fields written by different sides are at
// least blockBytes apart, so they never share a cache line.
func TestLayout(t *testing.T) {
	var r SPSC[*int]
	blocks := []struct {
		name string
		off  uintptr
	}{
		{"buf", unsafe.Offsetof(r.buf)},
		{"tail", unsafe.Offsetof(r.tail)},
		{"head", unsafe.Offsetof(r.head)},
		{"flags", unsafe.Offsetof(r.consumerParked)},
	}
	if blocks[0].off < blockBytes {
		t.Errorf("buf at %d: no leading pad", blocks[0].off)
	}
	for i := 1; i < len(blocks); i++ {
		if d := blocks[i].off - blocks[i-1].off; d < blockBytes {
			t.Errorf("%s is %d bytes after %s, want >= %d", blocks[i].name, d, blocks[i-1].name, blockBytes)
		}
	}
	if end := unsafe.Sizeof(r) - unsafe.Offsetof(r.consumerParked); end < blockBytes {
		t.Errorf("flags block is %d bytes, want >= %d", end, blockBytes)
	}
	if unsafe.Offsetof(r.headCache)-unsafe.Offsetof(r.tail) >= blockBytes ||
		unsafe.Offsetof(r.tailCache)-unsafe.Offsetof(r.head) >= blockBytes {
		t.Error("caches are not next to their side's index")
	}
}

func TestFIFOAndWrap(t *testing.T) {
	r := mustNew[int](t, 4)
	next, want := 0, 0
	for round := 0; round < 10; round++ {
		for r.TryPush(next) {
			next++
		}
		if r.Len() != 4 {
			t.Fatalf("full ring Len = %d", r.Len())
		}
		for k := 0; k < 3; k++ { // leave one so the indexes drift
			v, ok := r.TryPop()
			if !ok || v != want {
				t.Fatalf("pop = %d,%v want %d", v, ok, want)
			}
			want++
		}
	}
	if r.Pushed() != uint64(next) || r.Popped() != uint64(want) {
		t.Fatalf("Pushed %d Popped %d, want %d %d", r.Pushed(), r.Popped(), next, want)
	}
}

// TestDrained: the producer sees the ring drained exactly when the
// consumer has taken everything pushed, through its cached view of head.
func TestDrained(t *testing.T) {
	r := mustNew[int](t, 4)
	if !r.Drained() {
		t.Fatal("a new ring is not drained")
	}
	r.TryPush(1)
	r.TryPush(2)
	if r.Drained() {
		t.Fatal("drained with 2 values in it")
	}
	r.TryPop()
	if r.Drained() {
		t.Fatal("drained with 1 value in it")
	}
	r.TryPop()
	if !r.Drained() {
		t.Fatal("not drained after every value was popped")
	}
	r.TryPush(3)
	if r.Drained() {
		t.Fatal("drained after a push")
	}
}

func TestBatchWrap(t *testing.T) {
	r := mustNew[int](t, 8)
	in := []int{0, 1, 2, 3, 4, 5}
	if n := r.TryPushN(in); n != 6 {
		t.Fatalf("TryPushN = %d", n)
	}
	dst := make([]int, 5)
	if n := r.TryPopN(dst); n != 5 {
		t.Fatalf("TryPopN = %d", n)
	}
	// head = 5, tail = 6: the next push of 7 wraps around the end.
	if n := r.TryPushN([]int{6, 7, 8, 9, 10, 11, 12, 13, 14}); n != 7 {
		t.Fatalf("TryPushN on 7 free = %d", n)
	}
	if n := r.TryPushN([]int{99}); n != 0 {
		t.Fatalf("TryPushN on full = %d", n)
	}
	big := make([]int, 20)
	n := r.TryPopN(big)
	if n != 8 {
		t.Fatalf("TryPopN = %d, want 8", n)
	}
	for i := 0; i < n; i++ {
		if big[i] != 5+i {
			t.Fatalf("big[%d] = %d, want %d", i, big[i], 5+i)
		}
	}
	if n := r.TryPopN(big); n != 0 {
		t.Fatalf("TryPopN on empty = %d", n)
	}
}

func TestPoppedSlotsCleared(t *testing.T) {
	r := mustNew[*int](t, 8)
	vals := make([]*int, 8)
	for i := range vals {
		vals[i] = new(int)
	}
	r.TryPushN(vals[:5])
	r.TryPop()
	r.TryPopN(make([]*int, 2))
	r.TryPushN(vals[5:]) // wraps
	r.TryPopN(make([]*int, 8))
	for i, p := range r.buf {
		if p != nil {
			t.Errorf("slot %d still holds a value after pop", i)
		}
	}
}

func TestCloseDrains(t *testing.T) {
	r := mustNew[int](t, 8)
	r.TryPushN([]int{1, 2, 3})
	r.Close()
	r.Close() // idempotent
	if r.TryPush(4) {
		t.Fatal("TryPush after Close succeeded")
	}
	if _, err := r.Push(4); !errors.Is(err, ErrClosed) {
		t.Fatalf("Push after Close: %v", err)
	}
	if _, err := r.PushN([]int{4}); !errors.Is(err, ErrClosed) {
		t.Fatalf("PushN after Close: %v", err)
	}
	if v, err := r.Pop(); v != 1 || err != nil {
		t.Fatalf("Pop = %d, %v", v, err)
	}
	dst := make([]int, 4)
	if n, err := r.PopN(dst); n != 2 || err != nil || dst[0] != 2 || dst[1] != 3 {
		t.Fatalf("PopN = %d, %v, %v", n, err, dst)
	}
	if _, err := r.Pop(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pop on drained closed ring: %v", err)
	}
	if n, err := r.PopN(dst); n != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("PopN on drained closed ring: %d, %v", n, err)
	}
	if !r.Closed() || r.Canceled() {
		t.Fatal("flags wrong")
	}
}

func TestCancel(t *testing.T) {
	r := mustNew[int](t, 2)
	r.TryPushN([]int{1, 2})
	r.Cancel()
	if _, err := r.Push(3); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Push after Cancel: %v", err)
	}
	if _, err := r.Pop(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Pop after Cancel: %v", err)
	}
	if _, ok := r.TryPop(); ok {
		t.Fatal("TryPop after Cancel succeeded")
	}
	r.Close()
	if _, err := r.Pop(); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Pop after Cancel+Close: %v", err)
	}
}

// waitFlag waits until f is set, i.e. the other side has parked. It has no
// deadline of its own: a side that never parks hangs the test until go
// test's -timeout, which dumps the goroutines.
func waitFlag(t *testing.T, f func() bool) {
	t.Helper()
	for !f() {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestParkedConsumerWokenByPush(t *testing.T) {
	r := mustNew[int](t, 4)
	got := make(chan int)
	go func() {
		v, _ := r.Pop()
		got <- v
	}()
	waitFlag(t, func() bool { return r.consumerParked.Load() == 1 })
	r.TryPush(7)
	if v := <-got; v != 7 {
		t.Fatalf("woken consumer got %d", v)
	}
	if r.PopBlockedNs() <= 0 {
		t.Fatal("PopBlockedNs not counted")
	}
}

func TestParkedConsumerWokenByClose(t *testing.T) {
	r := mustNew[int](t, 4)
	errc := make(chan error)
	go func() {
		_, err := r.Pop()
		errc <- err
	}()
	waitFlag(t, func() bool { return r.consumerParked.Load() == 1 })
	r.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

func TestParkedProducerWokenByPop(t *testing.T) {
	r := mustNew[int](t, 2)
	r.TryPushN([]int{1, 2})
	type res struct {
		ns  int64
		err error
	}
	done := make(chan res)
	go func() {
		ns, err := r.Push(3)
		done <- res{ns, err}
	}()
	waitFlag(t, func() bool { return r.producerParked.Load() == 1 })
	time.Sleep(time.Millisecond)
	if v, ok := r.TryPop(); !ok || v != 1 {
		t.Fatalf("TryPop = %d, %v", v, ok)
	}
	out := <-done
	if out.err != nil || out.ns < int64(time.Millisecond) {
		t.Fatalf("Push returned %d ns, %v; want >= 1ms, nil", out.ns, out.err)
	}
	if r.PushBlockedNs() != out.ns {
		t.Fatalf("PushBlockedNs = %d, want %d", r.PushBlockedNs(), out.ns)
	}
}

func TestParkedProducerWokenByCancel(t *testing.T) {
	r := mustNew[int](t, 2)
	r.TryPushN([]int{1, 2})
	errc := make(chan error)
	go func() {
		_, err := r.PushN([]int{3, 4, 5})
		errc <- err
	}()
	waitFlag(t, func() bool { return r.producerParked.Load() == 1 })
	r.Cancel()
	if err := <-errc; !errors.Is(err, ErrCanceled) {
		t.Fatalf("got %v, want ErrCanceled", err)
	}
}

func TestUnblockedPushReportsZero(t *testing.T) {
	r := mustNew[int](t, 4)
	if ns, err := r.Push(1); ns != 0 || err != nil {
		t.Fatalf("Push into empty ring = %d, %v", ns, err)
	}
	if ns, err := r.PushN([]int{2, 3}); ns != 0 || err != nil {
		t.Fatalf("PushN into room = %d, %v", ns, err)
	}
	if r.PushBlockedNs() != 0 || r.Len() != 3 {
		t.Fatalf("PushBlockedNs %d Len %d", r.PushBlockedNs(), r.Len())
	}
}

// TestStress moves 10^7 items (10^6 under -race) between two goroutines,
// once one at a time and once in batches, and checks order and count.
func TestStress(t *testing.T) {
	n := uint64(10_000_000)
	if raceOn || testing.Short() {
		n = 1_000_000
	}
	t.Run("single", func(t *testing.T) { stress(t, n, 1) })
	t.Run("batch", func(t *testing.T) { stress(t, n, 64) })
}

func stress(t *testing.T, n uint64, batch int) {
	r := mustNew[uint64](t, 1024)
	go func() {
		buf := make([]uint64, batch)
		for i := uint64(0); i < n; {
			k := min(uint64(batch), n-i)
			for j := range k {
				buf[j] = i + j
			}
			if _, err := r.PushN(buf[:k]); err != nil {
				panic(err)
			}
			i += k
		}
		r.Close()
	}()
	want := uint64(0)
	if batch == 1 {
		for {
			v, err := r.Pop()
			if err != nil {
				break
			}
			if v != want {
				t.Fatalf("got %d, want %d", v, want)
			}
			want++
		}
	} else {
		dst := make([]uint64, 3*batch)
		for {
			k, err := r.PopN(dst)
			if err != nil {
				break
			}
			for _, v := range dst[:k] {
				if v != want {
					t.Fatalf("got %d, want %d", v, want)
				}
				want++
			}
		}
	}
	if want != n {
		t.Fatalf("received %d of %d", want, n)
	}
	runtime.Gosched()
}

// SetLimit bounds what the producer may push: TryPush and TryPushN stop at
// the limit, a limit lowered below the fill drops nothing and takes effect
// as the consumer drains, and raising it again gives the room back.
func TestSetLimit(t *testing.T) {
	r, err := New[int](16)
	if err != nil {
		t.Fatal(err)
	}
	if r.Limit() != 16 {
		t.Fatalf("default limit %d, want the capacity 16", r.Limit())
	}
	r.SetLimit(4)
	n := 0
	for r.TryPush(n) {
		n++
	}
	if n != 4 {
		t.Fatalf("pushed %d with limit 4", n)
	}
	r.SetLimit(2) // below the fill: nothing is dropped, nothing pushed
	if r.TryPushN([]int{9, 9}) != 0 || r.TryPush(9) {
		t.Fatal("pushed above a lowered limit")
	}
	for i := range 3 {
		if v, ok := r.TryPop(); !ok || v != i {
			t.Fatalf("pop %d: %d %v", i, v, ok)
		}
	}
	// 1 held, limit 2: one more fits.
	if got := r.TryPushN([]int{4, 5, 6}); got != 1 {
		t.Fatalf("TryPushN under limit 2 with 1 held pushed %d, want 1", got)
	}
	r.SetLimit(100) // clamped to the capacity
	if r.Limit() != 16 {
		t.Fatalf("limit %d after SetLimit(100), want 16", r.Limit())
	}
	if got := r.TryPushN(make([]int, 20)); got != 14 {
		t.Fatalf("TryPushN after raising the limit pushed %d, want 14", got)
	}
	r.SetLimit(0)
	if r.Limit() != 1 {
		t.Fatalf("limit %d after SetLimit(0), want 1", r.Limit())
	}
}
