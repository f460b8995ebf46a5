package window

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"streamd/core"
	"streamd/kvstate"
)

// An int64 sum is exact in 128 bits however its inputs are split into
// accumulators and merged (panes into windows): the sum, whether it fits
// an int64, and avg within an ulp of the exact mean.
func TestIntSumExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, -1, 0, 1}))
		vals := rapid.SliceOfN(v, 1, 64).Draw(t, "vals")
		parts := rapid.IntRange(1, len(vals)).Draw(t, "parts")
		b := bound{fn: Avg, in: core.Int64, field: 0}
		var total acc
		want := new(big.Int)
		for p := range parts {
			var a acc
			for i := p; i < len(vals); i += parts {
				if err := b.add(&a, []core.Value{core.IntValue(vals[i])}); err != nil {
					t.Fatal(err)
				}
			}
			b.merge(&total, &a)
		}
		for _, x := range vals {
			want.Add(want, big.NewInt(x))
		}
		if got := total.sum128(); got.Cmp(want) != 0 {
			t.Fatalf("sum %s, want %s", got, want)
		}
		if fits := want.IsInt64(); total.fitsInt() != fits || fits && total.i != want.Int64() {
			t.Fatalf("fits %v (low word %d), want %v", total.fitsInt(), total.i, fits)
		}
		mean, _ := new(big.Rat).SetFrac(want, big.NewInt(int64(len(vals)))).Float64()
		if got := total.avgInt(); got != mean && math.Abs(got-mean) > math.Abs(mean)*0x1p-52 {
			t.Fatalf("avg %v, want %v", got, mean)
		}
		if want.Sign() > 0 && total.avgInt() <= 0 || want.Sign() < 0 && total.avgInt() >= 0 {
			t.Fatalf("avg %v of sum %s has the wrong sign", total.avgInt(), want)
		}
	})
}

// overflowRun feeds records (key, event time in s, value) to one instance
// of def under policy mode, then finishes it; it returns the rows and the
// dead letters (input position, record, reason), or the error Process or
// Finish returned.
func overflowRun(t *testing.T, def core.OperatorDef, mode core.ErrorMode, recs []overflowRec) (rows, dead []string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	errs, _ := core.NewErrorPolicy(mode, path)
	op, err := def.New(core.Env{Channels: 1, Errors: errs})
	if err != nil {
		t.Fatal(err)
	}
	out := core.NewEmitter(def.Out, func(b *core.Batch) error {
		for i := 0; i < b.Len; i++ {
			rows = append(rows, rowText(def.Out, b.Row(i)))
		}
		b.Release()
		return nil
	}, nil)
	b := core.NewBatch(scriptSchema)
	for i, r := range recs {
		row := b.Append(uint64(i+1), uint64(len(r.k)), r.t*1e9, int64(i+2))
		row[0], row[1] = core.StringValue(r.k), core.IntValue(r.v)
	}
	if err = op.Process(b, out); err == nil {
		err = op.Finish(uint64(len(recs)+1), out)
	}
	out.Flush()
	return rows, readLines(path), err
}

type overflowRec struct {
	k string
	t int64
	v int64
}

func readLines(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// An int64 sum beyond the int64 range is not emitted wrapped: the row is
// handled by on_error (fail: the job's error; skip: dropped and counted;
// dead_letter: written with the exact sum). avg of the same values is
// their exact mean. Windows (tumbling, and sliding, whose windows merge
// panes) and running aggregates.
func TestIntSumOverflow(t *testing.T) {
	const mx = math.MaxInt64
	aggs := []Agg{{Name: "s", Func: Sum, Field: "v"}, {Name: "m", Func: Avg, Field: "v"}}
	avgOnly := []Agg{{Name: "m", Func: Avg, Field: "v"}}
	win := func(slide int64, aggs []Agg) core.OperatorDef {
		def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 10e9, Slide: slide * 1e9, Aggs: aggs, Groups: 16}, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	running := func() core.OperatorDef { // a def's instances share its state: one per case
		def, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Aggs: aggs, Groups: 16}, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	// Key a: MaxInt64, 1, 5 (sum 2⁶³+5); key b: -1, MinInt64+1 (fits).
	recs := []overflowRec{{"a", 1, mx}, {"a", 6, 1}, {"b", 2, -1}, {"a", 7, 5}, {"b", 3, math.MinInt64 + 1}}
	for _, c := range []struct {
		name string
		def  core.OperatorDef
		mode core.ErrorMode
		rows []string
		dead []string
		err  string
	}{
		{name: "tumbling/skip", def: win(10, aggs), mode: core.Skip,
			rows: []string{"1970-01-01T00:00:00Z 1970-01-01T00:00:10Z b -9223372036854775808 -4.611686018427388e+18"}},
		{name: "tumbling/dead_letter", def: win(10, aggs), mode: core.DeadLetter,
			rows: []string{"1970-01-01T00:00:00Z 1970-01-01T00:00:10Z b -9223372036854775808 -4.611686018427388e+18"},
			dead: []string{`{"input":"w","reason":"aggregate \"s\": sum(v) is 9223372036854775813, beyond the int64 range","record":"1970-01-01T00:00:00Z,1970-01-01T00:00:10Z,a,9223372036854775813,3.0744573456182584e+18"}`}},
		{name: "tumbling/fail", def: win(10, aggs), mode: core.Fail,
			err: `w: aggregate "s": sum(v) is 9223372036854775813, beyond the int64 range`},
		// Windows of 10 s every 5 s: [0,10) holds all of a and overflows;
		// [-5,5) holds only MaxInt64 and [5,15) only 1 and 5.
		{name: "sliding/skip", def: win(5, aggs), mode: core.Skip, rows: []string{
			"1969-12-31T23:59:55Z 1970-01-01T00:00:05Z a 9223372036854775807 9.223372036854776e+18",
			"1969-12-31T23:59:55Z 1970-01-01T00:00:05Z b -9223372036854775808 -4.611686018427388e+18",
			"1970-01-01T00:00:00Z 1970-01-01T00:00:10Z b -9223372036854775808 -4.611686018427388e+18",
			"1970-01-01T00:00:05Z 1970-01-01T00:00:15Z a 6 3",
		}},
		{name: "sliding/avg", def: win(5, avgOnly), mode: core.Fail, rows: []string{
			"1969-12-31T23:59:55Z 1970-01-01T00:00:05Z a 9.223372036854776e+18",
			"1969-12-31T23:59:55Z 1970-01-01T00:00:05Z b -4.611686018427388e+18",
			"1970-01-01T00:00:00Z 1970-01-01T00:00:10Z a 3.0744573456182584e+18",
			"1970-01-01T00:00:00Z 1970-01-01T00:00:10Z b -4.611686018427388e+18",
			"1970-01-01T00:00:05Z 1970-01-01T00:00:15Z a 3",
		}},
		// A running sum that leaves the range and comes back: the rows in
		// between are reported with their input positions.
		{name: "running/dead_letter", def: running(), mode: core.DeadLetter, rows: []string{
			"a 9223372036854775807 9.223372036854776e+18",
			"b -1 -1",
			"b -9223372036854775808 -4.611686018427388e+18",
		}, dead: []string{
			`{"input":"r","pos":3,"reason":"aggregate \"s\": sum(v) is 9223372036854775808, beyond the int64 range","record":"a,9223372036854775808,4.611686018427388e+18"}`,
			`{"input":"r","pos":5,"reason":"aggregate \"s\": sum(v) is 9223372036854775813, beyond the int64 range","record":"a,9223372036854775813,3.0744573456182584e+18"}`,
		}},
		{name: "running/fail", def: running(), mode: core.Fail, rows: []string{"a 9223372036854775807 9.223372036854776e+18"},
			err: `r:3: aggregate "s": sum(v) is 9223372036854775808, beyond the int64 range`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, dead, err := overflowRun(t, c.def, c.mode, recs)
			slices.Sort(rows)
			if c.err != "" {
				var re *core.RecordError
				if err == nil || err.Error() != c.err || !errors.As(err, &re) {
					t.Fatalf("error %v, want %s", err, c.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rows, c.rows) {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(c.rows, "\n"))
			}
			if !slices.Equal(dead, c.dead) {
				t.Errorf("dead letters\n%s\nwant\n%s", strings.Join(dead, "\n"), strings.Join(c.dead, "\n"))
			}
		})
	}
}

// A running aggregate's checkpoint written before sums were kept in 128
// bits (the third word of an int64 sum's accumulator was the float 0.0)
// restores to the same sums, also negative ones, and an overflowed sum
// round-trips through a checkpoint.
func TestIntSumSnapshotCompat(t *testing.T) {
	h := uint64(1) // any hash: the key's
	g := kvstate.KeyGroup(h, 16)
	// The old format, written out by hand: one group, one key, its sum -7
	// over 2 records.
	old := binary.AppendUvarint(nil, 1)
	old = binary.AppendUvarint(old, uint64(g))
	old = binary.LittleEndian.AppendUint32(old, 1)
	old = binary.LittleEndian.AppendUint64(old, h)
	old = binary.AppendUvarint(old, 1)
	old = append(old, 'a')
	old = binary.AppendVarint(old, 2)
	old = binary.AppendVarint(old, -7)
	old = binary.LittleEndian.AppendUint64(old, math.Float64bits(0))

	restore := func(data []byte) (core.Operator, *core.Emitter, *[]string) {
		def, err := NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Aggs: []Agg{{Name: "s", Func: Sum, Field: "v"}}, Groups: 16}, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		op, err := def.New(core.Env{Channels: 1, Errors: errs})
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			if err := op.(core.Snapshotter).RestoreGroups(data, nil); err != nil {
				t.Fatal(err)
			}
		}
		var rows []string
		out := core.NewEmitter(def.Out, func(b *core.Batch) error {
			for i := 0; i < b.Len; i++ {
				rows = append(rows, rowText(def.Out, b.Row(i)))
			}
			b.Release()
			return nil
		}, nil)
		return op, out, &rows
	}
	feed := func(op core.Operator, out *core.Emitter, vals ...int64) {
		b := core.NewBatch(scriptSchema)
		for i, v := range vals {
			row := b.Append(uint64(i+1), h, 0, int64(i+2))
			row[0], row[1] = core.StringValue("a"), core.IntValue(v)
		}
		if err := op.Process(b, out); err != nil {
			t.Fatal(err)
		}
		out.Flush()
	}

	op, out, rows := restore(old)
	feed(op, out, 3)
	if want := []string{"a -4"}; !slices.Equal(*rows, want) {
		t.Fatalf("after restoring an old checkpoint: %q, want %q", *rows, want)
	}
	// The same state written now is the same bytes.
	op, out, _ = restore(nil)
	feed(op, out, -3, -4)
	now, _ := op.(core.Snapshotter).SnapshotGroups(nil, []int{g})
	if !slices.Equal(now, old) {
		t.Fatalf("a sum that fits is written\n%x, was\n%x", now, old)
	}
	// Overflowed (MaxInt64 + 1, no row), checkpointed, restored, and back
	// in range.
	op, out, rows = restore(nil)
	feed(op, out, math.MaxInt64, 1)
	data, _ := op.(core.Snapshotter).SnapshotGroups(nil, []int{g})
	op, out, rows2 := restore(data)
	feed(op, out, -2)
	if want := []string{"a 9223372036854775807"}; !slices.Equal(*rows, want) {
		t.Fatalf("before the checkpoint: %q, want %q", *rows, want)
	}
	if want := []string{"a 9223372036854775806"}; !slices.Equal(*rows2, want) {
		t.Fatalf("after restoring an overflowed sum: %q, want %q", *rows2, want)
	}
}
