package window

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strings"

	"streamd/core"
	"streamd/kvstate"
)

// Func is an aggregate function.
type Func uint8

// The aggregate functions.
const (
	Count Func = iota + 1
	Sum
	Min
	Max
	Avg
	CountIf
)

// ParseFunc maps "count", "sum", "min", "max", "avg" or "count_if" to a Func.
func ParseFunc(s string) (Func, error) {
	switch s {
	case "count":
		return Count, nil
	case "sum":
		return Sum, nil
	case "min":
		return Min, nil
	case "max":
		return Max, nil
	case "avg":
		return Avg, nil
	case "count_if":
		return CountIf, nil
	}
	return 0, fmt.Errorf("unknown aggregate %q (expected count, sum, min, max, avg or count_if)", s)
}

// String is the function's name in job files ("count", "sum", …).
func (f Func) String() string {
	switch f {
	case Count:
		return "count"
	case Sum:
		return "sum"
	case Min:
		return "min"
	case Max:
		return "max"
	case Avg:
		return "avg"
	case CountIf:
		return "count_if"
	}
	return fmt.Sprintf("Func(%d)", uint8(f))
}

// Predicate is a compiled boolean expression over a record (eval.Program
// satisfies it).
type Predicate interface {
	EvalBool(row []core.Value) (bool, error)
}

// Agg is one aggregate of a window or running aggregate.
type Agg struct {
	// Name is the output field's name.
	Name string
	Func Func
	// Field is the input field for sum, min, max and avg, and for count
	// of a field (count(field): the records where it is not null; count
	// without a field counts records).
	Field string
	// If is the condition of count_if.
	If Predicate
}

// keyedAgg is what window and running aggregates share: the key group
// count, the grouping key and the aggregates, bound to the input schema,
// and the output schema: prefix fields, the key fields, one per aggregate.
type keyedAgg struct {
	groups int
	key    keyDef
	aggs   []bound
	out    *core.Schema
}

func bindKeyedAgg(name string, groups int, keyNames []string, specs []Agg, in *core.Schema, prefix ...core.Field) (keyedAgg, error) {
	k := keyedAgg{groups: groups}
	if k.groups == 0 {
		k.groups = kvstate.DefaultGroups
	}
	if err := kvstate.CheckGroups(k.groups); err != nil {
		return k, err
	}
	var err error
	if k.key, err = bindKey(keyNames, in); err != nil {
		return k, fmt.Errorf("%s: %w", name, err)
	}
	var aggFields []core.Field
	if k.aggs, aggFields, err = bind(specs, in); err != nil {
		return k, fmt.Errorf("%s: %w", name, err)
	}
	fields := append(append(prefix, k.key.fields()...), aggFields...)
	if k.out, err = core.NewSchema(fields...); err != nil {
		return k, fmt.Errorf("%s: output: %w", name, err)
	}
	return k, nil
}

// describe says what the state of an operator over k depends on, for
// core.OperatorDef.State: the key group count, the key fields and the
// aggregates with their inputs.
func (k keyedAgg) describe(specs []Agg) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key_groups=%d key=(", k.groups)
	for j, n := range k.key.names {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", n, k.key.types[j])
		if k.key.nullable[j] {
			b.WriteString(" null")
		}
	}
	b.WriteString(") aggregates=(")
	for j, a := range specs {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s(", a.Name, a.Func)
		switch {
		case a.Func == CountIf:
			if s, ok := a.If.(interface{ Source() string }); ok {
				b.WriteString(s.Source())
			}
		case a.Field != "":
			fmt.Fprintf(&b, "%s %s", a.Field, k.aggs[j].in)
			if k.aggs[j].nullable {
				b.WriteString(" null")
			}
		}
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}

// bound is an Agg resolved against the input schema.
type bound struct {
	fn    Func
	op    addOp // fn and input type in one, for the per-record switch
	field int
	in    core.Type
	out   core.Type
	pred  Predicate
	name  string // the output field
	arg   string // the input field, if any
	// nullable says the input field may be core.Null: add skips nulls
	// (SQL), and the result over no non-null input is core.Null (count:
	// 0). The op is then opOther, so aggregates of fields that are not
	// Nullable keep their inlined cases without a check.
	nullable bool
}

func bind(aggs []Agg, in *core.Schema) ([]bound, []core.Field, error) {
	bs := make([]bound, len(aggs))
	fields := make([]core.Field, len(aggs))
	for i, a := range aggs {
		b := bound{fn: a.Func, field: -1, name: a.Name, arg: a.Field}
		switch a.Func {
		case Count:
			b.out = core.Int64
			if a.Field != "" {
				f, err := in.Lookup(a.Field)
				if err != nil {
					return nil, nil, fmt.Errorf("aggregate %q: %w", a.Name, err)
				}
				b.field, b.in, b.nullable = f, in.Fields[f].Type, in.Fields[f].Nullable
			}
		case CountIf:
			if a.If == nil {
				return nil, nil, fmt.Errorf("aggregate %q: count_if needs a condition", a.Name)
			}
			b.out, b.pred = core.Int64, a.If
		case Sum, Min, Max, Avg:
			f, err := in.Lookup(a.Field)
			if err != nil {
				return nil, nil, fmt.Errorf("aggregate %q: %w", a.Name, err)
			}
			b.field, b.in, b.nullable = f, in.Fields[f].Type, in.Fields[f].Nullable
			switch {
			case b.in == core.Int64 || b.in == core.Float64:
			case b.in == core.Timestamp && (a.Func == Min || a.Func == Max):
			default:
				return nil, nil, fmt.Errorf("aggregate %q: %s of %s field %q", a.Name, funcName(a.Func), b.in, a.Field)
			}
			b.out = b.in
			if a.Func == Avg {
				b.out = core.Float64
			}
		default:
			return nil, nil, fmt.Errorf("aggregate %q: no function", a.Name)
		}
		b.op = opOf(b.fn, b.in)
		if b.nullable {
			b.op = opOther
		}
		bs[i] = b
		fields[i] = core.Field{Name: a.Name, Type: b.out, Nullable: b.nullable && a.Func != Count}
	}
	return bs, fields, nil
}

func funcName(f Func) string {
	return [...]string{"", "count", "sum", "min", "max", "avg", "count_if"}[f]
}

// acc is one aggregate's accumulator, 24 bytes (a pane holds inlineAccs
// of them in place, see keyState). n counts inputs. i holds integer
// minima and maxima, count_if's count, and the low word of an int64 sum.
// w is a word of two uses, by the aggregate's input type: for a float64
// input, the float sum, minimum or maximum (its bits: see f and setF); for
// an int64 sum or avg, the high word of the sum (see addInt).
//
// An int64 sum is exact in 128 bits, sum = hi·2⁶⁴ + i with i read as a
// signed int64 and hi = int64(w): hi counts i's signed overflows (+1 each
// time adding wrapped it past MaxInt64, -1 past MinInt64), the way DuckDB
// keeps SUM(BIGINT) in a HUGEINT. So the sum fits an int64 exactly when hi
// is 0, and then it is i; and hi is 0 in every accumulator written before
// sums were kept in 128 bits (w held the float 0.0 then), so old
// checkpoints restore unchanged. |hi| ≤ n, since each input moves it by
// at most one.
type acc struct {
	n int64
	i int64
	w uint64
}

// f is the float64 value of a float aggregate.
func (a *acc) f() float64 { return math.Float64frombits(a.w) }

// setF sets the float64 value of a float aggregate.
func (a *acc) setF(v float64) { a.w = math.Float64bits(v) }

// hi is the high word of an int64 sum.
func (a *acc) hi() int64 { return int64(a.w) }

// addInt adds v (or another sum's low word) to an int64 sum: the low word
// wraps, and a signed overflow (both operands of one sign, the result of
// the other) moves the high word by one toward v's sign. No allocation,
// and the branch is almost never taken.
func (a *acc) addInt(v int64) {
	s := a.i + v
	if (a.i^s)&(v^s) < 0 {
		if v < 0 {
			a.w--
		} else {
			a.w++
		}
	}
	a.i = s
}

// fitsInt says whether an int64 sum fits an int64 (it is then a.i).
func (a *acc) fitsInt() bool { return a.w == 0 }

// sum128 is an int64 sum as a big integer (error paths only: it allocates).
func (a *acc) sum128() *big.Int {
	s := big.NewInt(a.hi())
	s.Lsh(s, 64)
	return s.Add(s, big.NewInt(a.i))
}

// avgInt is an int64 sum divided by n > 0, rounded to a float64. The
// quotient is exact in 128 bits (|sum| ≤ n·2⁶³, so the quotient fits 64
// bits and Div64's high word is below n); the remainder adds its fraction.
// The result is within an ulp of the exact mean. A sum that fits an int64
// keeps float64(sum)/n, the division used before sums were 128-bit, so
// results without overflow do not change.
func (a *acc) avgInt() float64 {
	if a.fitsInt() {
		return float64(a.i) / float64(a.n)
	}
	// Two's complement of hi·2⁶⁴ + i with i signed: borrow one from hi
	// when i is negative.
	hi, lo := uint64(a.hi()), uint64(a.i)
	if a.i < 0 {
		hi--
	}
	neg := int64(hi) < 0
	if neg {
		var b uint64
		lo, b = bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, b)
	}
	n := uint64(a.n)
	if hi >= n { // not a sum of n int64s (|hi| ≤ n/2): no exact division
		v := math.Ldexp(float64(hi), 64) + float64(lo)
		if neg {
			v = -v
		}
		return v / float64(n)
	}
	q, r := bits.Div64(hi, lo, n)
	v := float64(q) + float64(r)/float64(n)
	if neg {
		v = -v
	}
	return v
}

// addOp is what adding a record does to an accumulator, for the common
// aggregates: the window's per-record loop (addAll) switches on it without
// a call; opOther goes through bound.add.
type addOp uint8

const (
	opOther addOp = iota
	opCount
	opSumInt // sum and avg of int64
	opMaxInt // max of int64 or timestamp
	opMinInt // min of int64 or timestamp
	opSumFloat
)

func opOf(fn Func, in core.Type) addOp {
	isInt := in == core.Int64 || in == core.Timestamp
	switch {
	case fn == Count:
		return opCount
	case (fn == Sum || fn == Avg) && in == core.Int64:
		return opSumInt
	case (fn == Sum || fn == Avg) && in == core.Float64:
		return opSumFloat
	case fn == Max && isInt:
		return opMaxInt
	case fn == Min && isInt:
		return opMinInt
	}
	return opOther
}

// addAll adds row to each aggregate's accumulator (accs[a] for aggs[a]):
// bound.add for every one, inlined for the common kinds. It returns the
// first error and the aggregate's index; the others are still added.
func addAll(aggs []bound, accs []acc, row []core.Value) (int, error) {
	accs = accs[:len(aggs)]
	bad, first := -1, error(nil)
	for a := range aggs {
		b, ac := &aggs[a], &accs[a]
		switch b.op {
		case opCount:
			ac.n++
		case opSumInt:
			ac.n++
			ac.addInt(row[b.field].Int())
		case opSumFloat:
			ac.n++
			ac.setF(ac.f() + row[b.field].Float())
		case opMaxInt:
			if v := row[b.field].Int(); ac.n == 0 || v > ac.i {
				ac.i = v
			}
			ac.n++
		case opMinInt:
			if v := row[b.field].Int(); ac.n == 0 || v < ac.i {
				ac.i = v
			}
			ac.n++
		default:
			if err := b.add(ac, row); err != nil && first == nil {
				bad, first = a, err
			}
		}
	}
	return bad, first
}

func (b *bound) add(a *acc, row []core.Value) error {
	if b.nullable && row[b.field].IsNull() {
		return nil
	}
	switch b.fn {
	case Count:
		a.n++
	case CountIf:
		ok, err := b.pred.EvalBool(row)
		if err != nil {
			return err
		}
		if ok {
			a.i++
		}
	case Sum, Avg:
		a.n++
		if b.in == core.Float64 {
			a.setF(a.f() + row[b.field].Float())
		} else {
			a.addInt(row[b.field].Int())
		}
	case Min:
		if b.in == core.Float64 {
			if v := row[b.field].Float(); a.n == 0 || v < a.f() {
				a.setF(v)
			}
		} else if v := row[b.field].Int(); a.n == 0 || v < a.i {
			a.i = v
		}
		a.n++
	case Max:
		if b.in == core.Float64 {
			if v := row[b.field].Float(); a.n == 0 || v > a.f() {
				a.setF(v)
			}
		} else if v := row[b.field].Int(); a.n == 0 || v > a.i {
			a.i = v
		}
		a.n++
	}
	return nil
}

// merge folds accumulator src into dst (combining panes into a window).
func (b *bound) merge(dst, src *acc) {
	switch b.fn {
	case Count:
		dst.n += src.n
	case CountIf:
		dst.i += src.i
	case Sum, Avg:
		dst.n += src.n
		if b.in == core.Float64 {
			dst.setF(dst.f() + src.f())
		} else {
			dst.addInt(src.i)
			dst.w += src.w
		}
	case Min, Max:
		if src.n == 0 {
			return
		}
		if dst.n == 0 {
			*dst = *src
			return
		}
		dst.n += src.n
		less := b.fn == Min
		if b.in == core.Float64 {
			if sf, df := src.f(), dst.f(); (sf < df) == less && sf != df {
				dst.setF(sf)
			}
		} else if (src.i < dst.i) == less && src.i != dst.i {
			dst.i = src.i
		}
	}
}

func (b *bound) result(a *acc) core.Value {
	if b.nullable && a.n == 0 && b.fn != Count {
		return core.Null()
	}
	switch b.fn {
	case Count:
		return core.IntValue(a.n)
	case CountIf:
		return core.IntValue(a.i)
	case Avg:
		if a.n == 0 {
			return core.FloatValue(math.NaN())
		}
		if b.in == core.Float64 {
			return core.FloatValue(a.f() / float64(a.n))
		}
		return core.FloatValue(a.avgInt())
	}
	if b.in == core.Float64 {
		return core.FloatValue(a.f())
	}
	return core.IntValue(a.i)
}

// overflow returns why the result of aggs over accs does not fit the
// output schema, or nil: an int64 sum beyond the int64 range (the first
// such aggregate; avg takes any sum). The caller reports it by the job's
// on_error policy instead of emitting the row: a wrapped sum would be a
// silently wrong result. Cheap enough for the per-record path of running
// aggregates: a compare or two per aggregate, no allocation.
func overflow(aggs []bound, accs []acc) error {
	for j := range aggs {
		if b := &aggs[j]; b.fn == Sum && b.in == core.Int64 && !accs[j].fitsInt() {
			return fmt.Errorf("aggregate %q: sum(%s) is %s, beyond the int64 range", b.name, b.arg, accs[j].sum128())
		}
	}
	return nil
}

// describeRow renders an output row for a dead letter or an error:
// prefix (window bounds, then key fields) with the aggregates of accs, an
// int64 sum beyond int64 written exactly. Error paths only: it allocates.
func describeRow(out *core.Schema, prefix []core.Value, aggs []bound, accs []acc) string {
	var sb strings.Builder
	var buf []byte
	for i, f := range out.Fields {
		if i > 0 {
			sb.WriteByte(',')
		}
		if i < len(prefix) {
			buf = core.AppendText(buf[:0], f.Type, prefix[i])
			sb.Write(buf)
			continue
		}
		j := i - len(prefix)
		if b := &aggs[j]; b.fn == Sum && b.in == core.Int64 && !accs[j].fitsInt() {
			sb.WriteString(accs[j].sum128().String())
			continue
		}
		buf = core.AppendText(buf[:0], f.Type, aggs[j].result(&accs[j]))
		sb.Write(buf)
	}
	return sb.String()
}
