package jobfile

import (
	"streamd/core"
	"streamd/core/ops"
)

// LookupCSVSpec joins with a CSV table.
type LookupCSVSpec struct {
	Path     string   `yaml:"path"`
	Key      string   `yaml:"key"`
	TableKey string   `yaml:"table_key"`
	Fields   []string `yaml:"fields"` // "column" or "column as name"
	OnMiss   string   `yaml:"on_miss"`
}

// lookup_csv: {path, key, table_key, fields, on_miss} adds fields from a
// CSV table loaded when the job is built (ops.LookupCSV).
func init() {
	registerOp(opEntry[*LookupCSVSpec]{name: "lookup_csv", rank: 40, build: buildLookupCSV})
}

func buildLookupCSV(b *opBuild, l *LookupCSVSpec) (core.OperatorDef, error) {
	if err := b.lookupKey(l.Key); err != nil {
		return core.OperatorDef{}, err
	}
	b.f.claimFile(b.path+".path", b.f.path(l.Path), "a lookup_csv table")
	opts := ops.LookupCSVOptions{Path: b.f.path(l.Path), Key: l.Key, TableKey: l.TableKey, OnMiss: l.OnMiss}
	for _, fl := range l.Fields {
		col, as := splitAs(fl)
		opts.Fields = append(opts.Fields, ops.LookupField{Column: col, As: as})
	}
	return ops.LookupCSV(b.name, opts, b.in, nil)
}

// lookupKey checks a lookup's key field.
func (b *opBuild) lookupKey(key string) error {
	if key == "" {
		return b.errAt("", "missing key (the input field to look up)")
	}
	if _, err := b.in.Lookup(key); err != nil {
		return b.errAt(".key", "%v", err)
	}
	return nil
}
