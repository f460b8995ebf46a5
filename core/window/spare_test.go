package window

import (
	"fmt"
	"testing"

	"streamd/core"
)

// TestOverlappingPanesAllocateNothing: every key's next window starts
// receiving records before its last window fires (records are in event-time
// order, the watermark follows the batch), so for a moment each key holds
// two panes, once per window. Once warm, that costs no allocation: keys
// reuse the pane arrays others gave back (giveBack). The fired rows
// are checked too, so the reuse cannot mix panes up.
func TestOverlappingPanesAllocateNothing(t *testing.T) {
	const keys, minute = 64, int64(60e9)
	schema := core.MustSchema(core.Field{Name: "key", Type: core.String}, core.Field{Name: "value", Type: core.Int64})
	def, err := New(Spec{Name: "w", Key: []string{"key"}, Size: minute, Slide: minute, Groups: 16,
		Aggs: []Agg{{Name: "n", Func: Count}, {Name: "total", Func: Sum, Field: "value"}}}, schema)
	if err != nil {
		t.Fatal(err)
	}
	env := core.Env{Channels: 1, Watermark: core.NoTime}
	env.Errors, _ = core.NewErrorPolicy(core.Fail, "")
	op, err := def.New(env)
	if err != nil {
		t.Fatal(err)
	}
	// Per key: a record late in window w (…:59) and one at the start of
	// window w+1; step w moves every event time on by a minute and then
	// fires window w.
	in := core.NewBatch(schema)
	for i := range keys {
		k := core.StringValue(fmt.Sprintf("k%02d", i))
		h := core.HashKey([]core.Value{k}, []int{0}, []core.Type{core.String})
		for j, at := range []int64{minute - 1e9, minute} {
			row := in.Append(uint64(2*i+j+1), h, at-minute, int64(2*i+j))
			row[0], row[1] = k, core.IntValue(int64(i))
		}
	}
	rows, bad := 0, ""
	out := core.NewEmitter(def.Out, func(x *core.Batch) error {
		for r := range x.Len {
			row := x.Row(r)
			rows++
			// window_start, window_end, key, n, total
			if n := row[3].Int(); n != 2 && row[0].Int() != 0 && bad == "" {
				bad = fmt.Sprintf("window %d key %s: count %d, want 2", row[0].Int(), row[2].Str(), n)
			}
		}
		x.Release()
		return nil
	}, nil)
	w := int64(0)
	step := func() {
		for r := range in.Len {
			in.Time[r] += minute
		}
		if err := op.Process(in, out); err != nil {
			t.Fatal(err)
		}
		if err := op.Watermark((w+1)*minute-1, uint64(w), out); err != nil {
			t.Fatal(err)
		}
		out.Flush()
		w++
	}
	for range 4 { // warm: key states, pane arrays, pools
		step()
	}
	if rows != 4*keys || bad != "" {
		t.Fatalf("after 4 windows: %d rows (want %d) %s", rows, 4*keys, bad)
	}
	if raceOn {
		return
	}
	if a := testing.AllocsPerRun(50, step); a >= 1 {
		t.Errorf("%.2f allocations per window of %d keys, want none", a, keys)
	}
	if bad != "" {
		t.Error(bad)
	}
}
