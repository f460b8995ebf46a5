package ops

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"streamd/core"
	"streamd/core/internal/bom"
)

// LookupCSVOptions configure LookupCSV.
type LookupCSVOptions struct {
	// Path is the CSV file: a header row, then one row per table entry
	// (RFC 4180 quoting, read with encoding/csv).
	Path string
	// Key is the input field looked up: a string field's value, or the
	// text form (core.AppendText) of a field of another type.
	Key string
	// TableKey is the table column matched against Key (Key if empty).
	TableKey string
	// Fields are the table columns added to each record; empty means every
	// column but TableKey, as strings.
	Fields []LookupField
	// OnMiss is what happens to a record whose key is not in the table:
	// "null" (the default) adds nulls, as SQL's LEFT JOIN does (the added
	// fields are then Nullable); "empty" adds zero values; "drop" drops
	// the record; "error" hands it to the error policy.
	OnMiss string
}

// LookupCSV joins each record with a CSV table loaded once, here, into a
// map shared read-only by all instances. Of rows with the same key the
// first wins. Typed columns are parsed with core.ParseValue; an empty cell
// is the type's zero value.
//
// Shapes: the output schema is in's fields followed by Fields (named As,
// typed Type, String by default); added names must not clash with in's.
//
// Ownership: Process reads the borrowed input batch and writes one output
// record per kept input record through out.Append, copying Seq, Hash, Time
// and Pos; the caller releases the input. Added string values share the
// table's strings.
//
// Errors: the constructor fails on an unreadable or malformed file (naming
// path, line and column), unknown columns or fields, or a bad OnMiss.
// Under OnMiss "error", a missed record goes to errs (nil: the instance's
// Env.Errors; both nil: fail). Stats reports hits, misses and rows (the
// table's size).
func LookupCSV(name string, opts LookupCSVOptions, in *core.Schema, errs *core.ErrorPolicy) (core.OperatorDef, error) {
	fail := func(err error) (core.OperatorDef, error) {
		return core.OperatorDef{}, fmt.Errorf("lookup_csv %s: %w", name, err)
	}
	onMiss, err := parseMiss(opts.OnMiss)
	if err != nil {
		return fail(err)
	}
	key, err := in.Lookup(opts.Key)
	if err != nil {
		return fail(fmt.Errorf("key: %w", err))
	}
	t, err := loadTable(opts)
	if err != nil {
		return fail(err)
	}
	out, err := joinSchema(in, t.fields, onMiss)
	if err != nil {
		return fail(err)
	}
	st := &lookupStats{}
	return core.OperatorDef{
		Name: name,
		Out:  out,
		Keep: core.KeepAll(len(in.Fields)), // the table's fields come after the input's
		New: func(env core.Env) (core.Operator, error) {
			return &csvLookup{name: name, in: in, t: t, key: key, keyType: in.Fields[key].Type, keyNull: in.Fields[key].Nullable,
				miss: onMiss, fill: missFill(onMiss, len(t.fields)), errs: policy(errs, env), stats: st}, nil
		},
		Stats: func() map[string]int64 {
			return map[string]int64{"hits": st.hits.Load(), "misses": st.misses.Load(), "rows": int64(len(t.rows))}
		},
	}, nil
}

type lookupStats struct {
	hits, misses atomic.Int64
}

// table is a loaded lookup table: key → the added fields' values. It is
// read-only after loadTable.
type table struct {
	fields []core.Field
	rows   map[string][]core.Value
}

func loadTable(opts LookupCSVOptions) (*table, error) {
	f, err := os.Open(opts.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(bom.NewReader(f), 64<<10))
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file, expected a header row", opts.Path)
		}
		return nil, fmt.Errorf("%s: %w", opts.Path, err)
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[h] = i
	}
	lookupCol := func(c string) (int, error) {
		if i, ok := col[c]; ok {
			return i, nil
		}
		return -1, fmt.Errorf("%s: no column %q (columns: %s)", opts.Path, c, strings.Join(header, ", "))
	}
	tk := opts.TableKey
	if tk == "" {
		tk = opts.Key
	}
	keyCol, err := lookupCol(tk)
	if err != nil {
		return nil, fmt.Errorf("table_key: %w", err)
	}
	fields := opts.Fields
	if len(fields) == 0 {
		for i, h := range header {
			if i != keyCol {
				fields = append(fields, LookupField{Column: h})
			}
		}
	}
	t := &table{rows: make(map[string][]core.Value), fields: make([]core.Field, len(fields))}
	cols := make([]int, len(fields))
	for k, lf := range fields {
		if cols[k], err = lookupCol(lf.Column); err != nil {
			return nil, err
		}
		t.fields[k] = core.Field{Name: lf.name(), Type: lf.typ()}
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", opts.Path, err)
		}
		k := rec[keyCol]
		if _, dup := t.rows[k]; dup {
			continue
		}
		vals := make([]core.Value, len(cols))
		for j, c := range cols {
			cell, typ := rec[c], t.fields[j].Type
			if cell == "" && typ != core.String {
				continue // an empty cell is the zero value
			}
			v, err := core.ParseValue(typ, cell)
			if err != nil {
				line, column := r.FieldPos(c)
				return nil, fmt.Errorf("%s:%d:%d: column %q: %v", opts.Path, line, column, header[c], err)
			}
			vals[j] = v
		}
		t.rows[k] = vals
	}
	return t, nil
}

type csvLookup struct {
	core.Base
	name    string
	in      *core.Schema
	t       *table
	key     int
	keyType core.Type
	keyNull bool // the key field is Nullable: a null key matches nothing
	miss    miss
	fill    []core.Value // what a miss adds under missEmpty or missNull
	errs    *core.ErrorPolicy
	stats   *lookupStats
	buf     []byte
}

// errNotFound is the reason reported for a missed key under on_miss: error.
var errNotFound = errors.New("key not found")

func (l *csvLookup) Process(in *core.Batch, out *core.Emitter) error {
	if err := checkWidth(l.name, l.in, in); err != nil {
		return err
	}
	w := in.Schema.Width()
	vals := in.Vals
	var hits, misses int64
	for i := 0; i < in.Len; i++ {
		row := vals[i*w : (i+1)*w : (i+1)*w]
		var add []core.Value
		var ok bool
		null := l.keyNull && row[l.key].IsNull()
		if null {
			// A null key matches nothing (SQL: NULL = x is not true).
		} else if k, inBuf := keyText(l.keyType, row[l.key], &l.buf); inBuf {
			add, ok = l.t.rows[string(l.buf)]
		} else {
			add, ok = l.t.rows[k]
		}
		if ok {
			hits++
		} else {
			misses++
			switch l.miss {
			case missDrop:
				continue
			case missError:
				reason := fmt.Errorf("%w: %s=%q", errNotFound, l.in.Fields[l.key].Name, core.AppendText(nil, l.keyType, row[l.key]))
				if null {
					reason = fmt.Errorf("%w: %s is null", errNotFound, l.in.Fields[l.key].Name)
				}
				if err := bad(l.errs, l.name, in, i, reason); err != nil {
					l.stats.hits.Add(hits)
					l.stats.misses.Add(misses)
					return err
				}
				continue
			}
			add = l.fill
		}
		o := out.Append(in.Seq[i], in.Hash[i], in.Time[i], in.Pos[i])
		copy(o, row)
		copy(o[w:], add)
	}
	l.stats.hits.Add(hits)
	l.stats.misses.Add(misses)
	return nil
}
