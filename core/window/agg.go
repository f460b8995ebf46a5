package window

import (
	"fmt"
	"math"
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
	// Field is the input field for sum, min, max and avg.
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
		}
		b.WriteString(")")
	}
	b.WriteString(")")
	return b.String()
}

// bound is an Agg resolved against the input schema.
type bound struct {
	fn    Func
	field int
	in    core.Type
	out   core.Type
	pred  Predicate
}

func bind(aggs []Agg, in *core.Schema) ([]bound, []core.Field, error) {
	bs := make([]bound, len(aggs))
	fields := make([]core.Field, len(aggs))
	for i, a := range aggs {
		b := bound{fn: a.Func, field: -1}
		switch a.Func {
		case Count:
			b.out = core.Int64
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
			b.field, b.in = f, in.Fields[f].Type
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
		bs[i] = b
		fields[i] = core.Field{Name: a.Name, Type: b.out}
	}
	return bs, fields, nil
}

func funcName(f Func) string {
	return [...]string{"", "count", "sum", "min", "max", "avg", "count_if"}[f]
}

// acc is one aggregate's accumulator: n counts inputs, i holds integer sums,
// minima and maxima (and count_if's count), f float ones.
type acc struct {
	n int64
	i int64
	f float64
}

func (b *bound) add(a *acc, row []core.Value) error {
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
			a.f += row[b.field].Float()
		} else {
			a.i += row[b.field].Int()
		}
	case Min:
		if b.in == core.Float64 {
			if v := row[b.field].Float(); a.n == 0 || v < a.f {
				a.f = v
			}
		} else if v := row[b.field].Int(); a.n == 0 || v < a.i {
			a.i = v
		}
		a.n++
	case Max:
		if b.in == core.Float64 {
			if v := row[b.field].Float(); a.n == 0 || v > a.f {
				a.f = v
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
		dst.i += src.i
		dst.f += src.f
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
			if (src.f < dst.f) == less && src.f != dst.f {
				dst.f = src.f
			}
		} else if (src.i < dst.i) == less && src.i != dst.i {
			dst.i = src.i
		}
	}
}

func (b *bound) result(a *acc) core.Value {
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
			return core.FloatValue(a.f / float64(a.n))
		}
		return core.FloatValue(float64(a.i) / float64(a.n))
	}
	if b.in == core.Float64 {
		return core.FloatValue(a.f)
	}
	return core.IntValue(a.i)
}
