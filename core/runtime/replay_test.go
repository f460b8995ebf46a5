package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamd/core"
)

func drain(t *testing.T, s core.Source) []string {
	t.Helper()
	var out []string
	for {
		b, err := s.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len; i++ {
			out = append(out, fmt.Sprint(b.Row(i)[0].Str(), b.Row(i)[1].Int(), b.Row(i)[2].Time()))
		}
		b.Release()
	}
}

// Reading to a position, then a fresh source skipped to it, gives the rest
// of the input exactly.
func TestReplayableContinuesAtPosition(t *testing.T) {
	recs := genRecords(5000, 20, 3)
	full := drain(t, &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(1, 1))})
	for _, cut := range []int64{0, 1, 511, 512, 2500, 4999, 5000} {
		r := core.NewReplayable(&sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(2, 2))})
		if err := r.Skip(cut); err != nil {
			t.Fatal(err)
		}
		rest := drain(t, r)
		if strings.Join(rest, "|") != strings.Join(full[cut:], "|") {
			t.Fatalf("skip %d: %d records after, want %d", cut, len(rest), len(full)-int(cut))
		}
		if r.Position() != int64(len(full)) {
			t.Fatalf("skip %d: position %d at the end, want %d", cut, r.Position(), len(full))
		}
	}
	r := core.NewReplayable(&sliceSource{recs: recs[:10], rnd: rand.New(rand.NewPCG(2, 2))})
	r.Skip(20)
	if _, err := r.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "before the checkpoint's position") {
		t.Fatalf("skip past the end: %v", err)
	}
}

// skipSource is a sliceSource that implements core.Skipper.
type skipSource struct {
	*sliceSource
	calls []int64 // the n of each SkipRecords
}

func (s *skipSource) SkipRecords(ctx context.Context, n int64) (int64, error) {
	s.calls = append(s.calls, n)
	k := min(n, int64(len(s.recs)-s.i))
	s.i += int(k)
	if k < n {
		return k, io.EOF
	}
	return n, nil
}

// A source that can skip is skipped with one SkipRecords call, not re-read,
// and continues exactly at the position.
func TestReplayableUsesSkipper(t *testing.T) {
	recs := genRecords(3000, 20, 5)
	full := drain(t, &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(1, 1))})
	for _, cut := range []int64{0, 1, 512, 2999, 3000} {
		src := &skipSource{sliceSource: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(2, 2))}}
		r := core.NewReplayable(src)
		if err := r.Skip(cut); err != nil {
			t.Fatal(err)
		}
		rest := drain(t, r)
		if strings.Join(rest, "|") != strings.Join(full[cut:], "|") || r.Position() != 3000 {
			t.Fatalf("skip %d: %d records after, position %d", cut, len(rest), r.Position())
		}
		if want := fmt.Sprint([]int64{cut}); cut > 0 && fmt.Sprint(src.calls) != want {
			t.Fatalf("skip %d: SkipRecords calls %v, want %s", cut, src.calls, want)
		}
	}
	r := core.NewReplayable(&skipSource{sliceSource: &sliceSource{recs: recs[:10], rnd: rand.New(rand.NewPCG(2, 2))}})
	r.Skip(20)
	if _, err := r.Next(context.Background()); err == nil || err.Error() != "replay: the input ended 10 records before the checkpoint's position" {
		t.Fatalf("skip past the end: %v", err)
	}
}

// badSource hands out records 0…n-1 in batches of 100 good records; every
// seventh is malformed and goes to the policy instead, with its 1-based
// index as pos. skipper sources also implement core.Skipper, reporting
// the malformed records they skip as Next does.
type badSource struct {
	n, i int
	errs *core.ErrorPolicy
}

func (s *badSource) Schema() *core.Schema { return testSchema }
func (s *badSource) Close() error         { return nil }

// next advances to the next good record, reporting malformed ones; false
// at the end.
func (s *badSource) next() (int, bool, error) {
	for ; s.i < s.n; s.i++ {
		if s.i%7 == 3 {
			if err := s.errs.Bad("bad", int64(s.i+1), "", errors.New("malformed")); err != nil {
				return 0, false, err
			}
			continue
		}
		s.i++
		return s.i - 1, true, nil
	}
	return 0, false, nil
}

func (s *badSource) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := core.NewBatch(testSchema)
	for b.Len < 100 {
		i, ok, err := s.next()
		if err != nil || !ok {
			if err == nil && b.Len > 0 {
				break
			}
			b.Release()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		row := b.Append(0, 0, core.NoTime, int64(i+1))
		row[0], row[1], row[2] = core.StringValue("k"), core.IntValue(int64(i)), core.TimeValue(0)
	}
	return b, nil
}

type badSkipper struct{ badSource }

func (s *badSkipper) SkipRecords(ctx context.Context, n int64) (int64, error) {
	for k := int64(0); k < n; k++ {
		if _, ok, err := s.next(); err != nil || !ok {
			if err == nil {
				err = io.EOF
			}
			return k, err
		}
	}
	return n, nil
}

// While a Replayable skips to a restored position, the policy given by
// MuteWhileSkipping is muted: malformed records before the position (before
// the good record it ends on) are not handled again, those after it are,
// whether the source is re-read or skips by itself; the policy is unmuted
// when Next returns, also after an error.
func TestReplayableMutesPolicy(t *testing.T) {
	const n = 1000 // records; 857 good, batches of 100 good ones
	for _, skipper := range []bool{false, true} {
		for _, cut := range []int64{0, 100, 300, 800, 857} {
			dl := filepath.Join(t.TempDir(), "dead.jsonl")
			errs, _ := core.NewErrorPolicy(core.DeadLetter, dl)
			var src core.Source = &badSource{n: n, errs: errs}
			if skipper {
				src = &badSkipper{badSource{n: n, errs: errs}}
			}
			r := core.NewReplayable(src)
			r.MuteWhileSkipping(errs)
			r.Skip(cut)
			got := drain(t, r)
			errs.Close()
			// The cut-th good record's index: malformed ones after it are
			// handled.
			var want []int64
			good := int64(0)
			for i := range n {
				if i%7 == 3 {
					if good >= cut {
						want = append(want, int64(i+1))
					}
					continue
				}
				good++
			}
			if len(got) != int(857-cut) || r.Position() != 857 {
				t.Fatalf("skipper %v, cut %d: %d records after, position %d", skipper, cut, len(got), r.Position())
			}
			var letters []int64
			if len(want) > 0 {
				letters = readLetters(t, dl)
			}
			if fmt.Sprint(letters) != fmt.Sprint(want) || errs.DeadLettered.Load() != int64(len(want)) {
				t.Fatalf("skipper %v, cut %d: %d dead letters %.60v…, want %d %.60v…", skipper, cut, errs.DeadLettered.Load(), letters, len(want), want)
			}
		}
	}
	// Interrupted while skipping: the policy is unmuted again.
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	r := core.NewReplayable(&badSource{n: n, errs: errs})
	r.MuteWhileSkipping(errs)
	r.Skip(300)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Next(c); err != context.Canceled {
		t.Fatal(err)
	}
	if errs.Bad("x", 1, "", errors.New("bad")); errs.Skipped.Load() != 1 {
		t.Fatal("the policy stayed muted after an interrupted skip")
	}
	var nilReplay *core.Replayable
	nilReplay.MuteWhileSkipping(errs) // a job without checkpoints: no Replayable
}

// SkipInBatch(n, k): a position k records into one of the source's
// batches (a checkpoint between two pieces). A source that skips (here
// a generator's way: after SkipRecords its batches start where it
// stopped) is skipped to the batch's start, and the rest of that batch
// comes as one batch: the batches after the position are those of the
// uninterrupted read, and so are the records and the position.
func TestReplayableSkipInBatch(t *testing.T) {
	recs := genRecords(3000, 20, 5)
	read := func(r core.Source) (sizes []int, lines []string) {
		for {
			b, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				return sizes, lines
			}
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, b.Len)
			for i := range b.Len {
				lines = append(lines, fmt.Sprint(b.Row(i)[0].Str(), b.Pos[i]))
			}
			b.Release()
		}
	}
	fullSizes, full := read(&skippingBlocks{blockSource: fixedBlocks(recs, 2)})
	for _, tc := range []struct{ n, k int64 }{{0, 0}, {700, 188}, {1024, 0}, {1025, 1}, {2999, 439}} {
		src := &skippingBlocks{blockSource: fixedBlocks(recs, 2)}
		r := core.NewReplayable(src)
		if err := r.SkipInBatch(tc.n, tc.k); err != nil {
			t.Fatal(err)
		}
		sizes, rest := read(r)
		batch := int(tc.n) / core.BatchSize // the position's batch, in the full read
		want := append([]int{fullSizes[batch] - int(tc.k)}, fullSizes[batch+1:]...)
		if tc.k == 0 {
			want = fullSizes[batch:]
		}
		if !slices.Equal(rest, full[tc.n:]) || r.Position() != 3000 || !slices.Equal(sizes, want) {
			t.Fatalf("SkipInBatch(%d, %d): %d records after, position %d, batches %v, want %v", tc.n, tc.k, len(rest), r.Position(), sizes, want)
		}
	}
	if err := core.NewReplayable(&skippingBlocks{blockSource: fixedBlocks(recs, 2)}).SkipInBatch(5, 6); err == nil {
		t.Fatal("SkipInBatch(5, 6): no error")
	}
}
