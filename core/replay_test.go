package core_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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
