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
