package window

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"

	"streamd/core"
	"streamd/kvstate"
)

var nullSchema = core.MustSchema(
	core.Field{Name: "k", Type: core.String, Nullable: true},
	core.Field{Name: "v", Type: core.Int64, Nullable: true},
	core.Field{Name: "f", Type: core.Float64, Nullable: true},
)

// feedRows is feeder.records for rows of nullSchema keyed by k.
func (f *feeder) feedRows(t *testing.T, ts []int64, rows [][]core.Value) {
	for c, op := range f.ops {
		b := core.NewBatch(nullSchema)
		for i, r := range rows {
			h := core.HashKey(r, []int{0}, []core.Type{core.String})
			if f.table.Owner(kvstate.KeyGroup(h, 64)) != c {
				continue
			}
			copy(b.Append(uint64(i+1), h, ts[i], int64(i+1)), r)
		}
		if err := op.Process(b, f.outs[c]); err != nil {
			t.Fatal(err)
		}
		f.outs[c].Flush()
		b.Release()
	}
}

// nullText renders a row with NULL for a null (rowText writes it empty,
// as the CSV sink does, which would not tell it from the key "").
func nullText(s *core.Schema, r []core.Value) string {
	var b []byte
	for j, f := range s.Fields {
		if j > 0 {
			b = append(b, ' ')
		}
		if r[j].IsNull() {
			b = append(b, "NULL"...)
			continue
		}
		b = core.AppendText(b, f.Type, r[j])
	}
	return string(b)
}

// Nulls in window state: the null key is a group of its own (apart from
// the key ""), count counts records, count(v) non-null values, sum, min,
// max and avg skip nulls and are NULL over only nulls — equal to a
// reference computed here by SQL's rules — and a snapshot restored into
// another channel count gives exactly the uninterrupted output.
func TestNullsInWindowsAndSnapshots(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 9))
	const n = 4000
	keys := []core.Value{core.StringValue("a"), core.StringValue("b"), core.StringValue(""), core.Null()}
	ts := make([]int64, n)
	rows := make([][]core.Value, n)
	for i := range rows {
		ts[i] = int64(i) * 1e7 // in order: every record counts
		k := keys[rnd.IntN(len(keys))]
		v, f := core.IntValue(rnd.Int64N(100)-50), core.FloatValue(float64(rnd.IntN(64))/4)
		if rnd.IntN(4) == 0 {
			v = core.Null()
		}
		if rnd.IntN(3) == 0 {
			f = core.Null()
		}
		// Key "b" in the second window holds only null values.
		if k.Str() == "b" && ts[i] >= 10e9 && ts[i] < 20e9 {
			v, f = core.Null(), core.Null()
		}
		rows[i] = []core.Value{k, v, f}
	}
	const size = int64(10e9)
	mk := func() core.OperatorDef {
		def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: size, Slide: size, Groups: 64, Aggs: []Agg{
			{Name: "n", Func: Count}, {Name: "nv", Func: Count, Field: "v"}, {Name: "s", Func: Sum, Field: "v"},
			{Name: "lo", Func: Min, Field: "v"}, {Name: "hi", Func: Max, Field: "v"}, {Name: "a", Func: Avg, Field: "f"},
		}}, nullSchema)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	def := mk()
	if got, want := def.Out.String(), "(window_start timestamp, window_end timestamp, k string null, n int64, nv int64, s int64 null, lo int64 null, hi int64 null, a float64 null)"; got != want {
		t.Fatalf("output schema %s\nwant %s", got, want)
	}

	// The reference: GROUP BY window, k with SQL's aggregates.
	type agg struct {
		n, nv, s, lo, hi, nf int64
		fs                   float64
	}
	groups := map[[2]string]*agg{}
	for i, r := range rows {
		k := "NULL"
		if !r[0].IsNull() {
			k = "'" + r[0].Str()
		}
		g := [2]string{strconv.FormatInt(ts[i]/size, 10), k}
		a := groups[g]
		if a == nil {
			a = &agg{}
			groups[g] = a
		}
		a.n++
		if !r[1].IsNull() {
			x := r[1].Int()
			if a.nv == 0 || x < a.lo {
				a.lo = x
			}
			if a.nv == 0 || x > a.hi {
				a.hi = x
			}
			a.nv++
			a.s += x
		}
		if !r[2].IsNull() {
			a.nf++
			a.fs += r[2].Float()
		}
	}
	var want []string
	allNull := 0
	for g, a := range groups {
		w, _ := strconv.ParseInt(g[0], 10, 64)
		start, end := core.AppendText(nil, core.Timestamp, core.TimeValue(w*size)), core.AppendText(nil, core.Timestamp, core.TimeValue((w+1)*size))
		k := "NULL"
		if g[1] != "NULL" {
			k = g[1][1:]
		}
		s, lo, hi, avg := "NULL", "NULL", "NULL", "NULL"
		if a.nv > 0 {
			s, lo, hi = fmt.Sprint(a.s), fmt.Sprint(a.lo), fmt.Sprint(a.hi)
		} else {
			allNull++
		}
		if a.nf > 0 {
			avg = strconv.FormatFloat(a.fs/float64(a.nf), 'g', -1, 64)
		}
		want = append(want, fmt.Sprintf("%s %s %s %d %d %s %s %s %s", start, end, k, a.n, a.nv, s, lo, hi, avg))
	}
	sort.Strings(want)
	if allNull == 0 || len(groups) < 16 {
		t.Fatalf("the input does not test what it should: %d groups, %d with only null values", len(groups), allNull)
	}

	got := runNullText(t, mk, ts, rows, -1, 1, 1)
	if !slices.Equal(got, want) {
		t.Fatalf("uninterrupted: %d rows, want %d\n got %q\nwant %q", len(got), len(want), got[:min(6, len(got))], want[:min(6, len(want))])
	}
	for _, c := range []struct{ cut, from, to int }{{1500, 1, 1}, {2000, 3, 2}, {1000, 2, 5}} {
		if got := runNullText(t, mk, ts, rows, c.cut, c.from, c.to); !slices.Equal(got, want) {
			t.Fatalf("restore at %d, %d→%d channels: %d rows vs %d", c.cut, c.from, c.to, len(got), len(want))
		}
	}
}

// runNullText runs rows through window instances like feeder does,
// snapshotting at record cut (-1: never) and restoring into to channels,
// and returns the output rows rendered by nullText, sorted.
func runNullText(t *testing.T, mk func() core.OperatorDef, ts []int64, rows [][]core.Value, cut, from, to int) []string {
	var out []string
	build := func(channels int, wm int64, rescaled bool) *feeder {
		f := newFeeder(t, mk(), channels, wm, rescaled)
		for c := range f.outs {
			def := f.def
			f.outs[c] = core.NewEmitter(def.Out, func(b *core.Batch) error {
				for i := 0; i < b.Len; i++ {
					out = append(out, nullText(def.Out, b.Row(i)))
				}
				b.Release()
				return nil
			}, nil)
		}
		return f
	}
	f := build(from, core.NoTime, false)
	wm := int64(core.NoTime)
	for i := 0; i < len(rows); i += 250 {
		j := min(len(rows), i+250)
		if i == cut {
			snaps := f.snapshot(t)
			g := build(to, wm, true)
			for c, op := range g.ops {
				for _, s := range snaps {
					owns := func(grp int) bool { return g.table.Owner(grp) == c }
					if err := op.(core.Snapshotter).RestoreGroups(s, owns); err != nil {
						t.Fatal(err)
					}
				}
			}
			f = g
		}
		f.feedRows(t, ts[i:j], rows[i:j])
		wm = ts[j-1] - 1
		f.watermark(t, wm)
	}
	f.finish(t)
	sort.Strings(out)
	return out
}

// The window's Order (the merger's tie between channels) puts a null key
// after every other key of the same window, as sortByKey does inside one
// channel, so the output order does not depend on the channel count.
func TestOrderNullKeyLast(t *testing.T) {
	def, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 10, Slide: 10, Groups: 64, Aggs: []Agg{{Name: "n", Func: Count}}}, nullSchema)
	if err != nil {
		t.Fatal(err)
	}
	row := func(k core.Value) []core.Value {
		return []core.Value{core.TimeValue(0), core.TimeValue(10), k, core.IntValue(1)}
	}
	for _, k := range []core.Value{core.StringValue(""), core.StringValue("\x00"), core.StringValue("k3"), core.StringValue("\xff\xff")} {
		if c := def.Order(row(core.Null()), row(k)); c <= 0 {
			t.Errorf("Order(null, %q) = %d, want > 0", k.Str(), c)
		}
		if c := def.Order(row(k), row(core.Null())); c >= 0 {
			t.Errorf("Order(%q, null) = %d, want < 0", k.Str(), c)
		}
	}
	if c := def.Order(row(core.Null()), row(core.Null())); c != 0 {
		t.Errorf("Order(null, null) = %d, want 0", c)
	}
}
