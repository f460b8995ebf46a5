package runtime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/core/window"
	"streamd/internal/tier"
)

// bruteWindows computes count and sum per (window, key) directly, for
// windows of size every slide (ns), in (window end, key) order.
func bruteWindows(recs []rec, size, slide int64) []string {
	type wk struct {
		end int64
		k   string
	}
	agg := map[wk][2]int64{}
	for _, r := range recs {
		last := r.ts / slide * slide
		for start := last - size + slide; start <= last; start += slide {
			a := agg[wk{start + size, r.k}]
			agg[wk{start + size, r.k}] = [2]int64{a[0] + 1, a[1] + r.v}
		}
	}
	keys := make([]wk, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].end < keys[j].end || keys[i].end == keys[j].end && keys[i].k < keys[j].k
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d,%s,%d,%d", k.end, k.k, agg[k][0], agg[k][1])
	}
	return out
}

// Windows over out-of-order input (within the watermark bound, so nothing
// is late), tumbling and sliding, with the channel count changing at
// random: the output equals a direct computation, record for record.
func TestWindowsOutOfOrderAndRescaled(t *testing.T) {
	for seed := uint64(1); seed <= tier.Pick[uint64](4, 12); seed++ { // 12 in the long tier
		rnd := rand.New(rand.NewPCG(seed, 5))
		recs := genRecords(8000, 40, seed)
		const jitter = 20e9
		for i := range recs { // up to 20 s out of order
			recs[i].ts += rnd.Int64N(jitter) + 1e12
		}
		size := int64(10+rnd.IntN(50)) * 1e9
		slide := size
		if seed%2 == 0 {
			slide = size / int64(1+rnd.IntN(5))
			size = slide * (size / slide)
		}
		def, err := window.New(window.Spec{Name: "w", Key: []string{"k"}, Size: size, Slide: slide,
			Aggs: []window.Agg{{Name: "n", Func: window.Count}, {Name: "s", Func: window.Sum, Field: "v"}}}, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		job := &runtime.Job{Source: &sliceSource{recs: recs, rnd: rand.New(rand.NewPCG(seed, 3))},
			EventTime: runtime.EventTime{Field: "ts", MaxOutOfOrder: jitter},
			Region: &runtime.Region{Channels: 2, Key: []string{"k"}, Ops: []core.OperatorDef{def},
				MaxChannels: 5, Schedule: randomSchedule(seed, 5)},
			Sink: sink, RingSize: 4}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Late != 0 {
			t.Fatalf("seed %d: %d late records", seed, rep.Late)
		}
		got := make([]string, len(sink.lines))
		for i, l := range sink.lines {
			// window_start, window_end, k, n, s
			parts := splitCSV(l)
			end, err := core.ParseTime(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			got[i] = fmt.Sprintf("%d,%s,%s,%s", end, parts[2], parts[3], parts[4])
		}
		want := bruteWindows(recs, size, slide)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d (size %d s, slide %d s, %d rescales): %d rows vs %d: %s", seed, size/1e9, slide/1e9, rep.Rescales, len(got), len(want), diffAt(got, want))
		}
	}
}

func splitCSV(l string) []string {
	var out []string
	start := 0
	for i := 0; i < len(l); i++ {
		if l[i] == ',' {
			out = append(out, l[start:i])
			start = i + 1
		}
	}
	return append(out, l[start:])
}
