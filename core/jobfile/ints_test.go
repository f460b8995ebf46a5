package jobfile

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// intKeys lists the path of every integer-typed key of t, with [0] for a
// list item ("pipeline[0].lookup_http.max_cost").
func intKeys(t reflect.Type, path string) []string {
	t = yamlType(t) // the registry's shape for ops, source and sink
	if t == mapSliceType || strings.Count(path, "union[") > 1 {
		return nil // a union's entries are sources: walk them once
	}
	switch t.Kind() {
	case reflect.Struct:
		var keys []string
		for i := range t.NumField() {
			k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if k == "" {
				continue
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			keys = append(keys, intKeys(t.Field(i).Type, p)...)
		}
		return keys
	case reflect.Slice:
		return intKeys(t.Elem(), path+"[0]")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []string{path}
	}
	return nil
}

// document returns YAML text holding only the key at path, with the raw
// value written as is.
func document(t *testing.T, path, raw string) string {
	t.Helper()
	var v any = "VALUE"
	segs := segments(path)
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].index >= 0 {
			v = []any{v}
		} else {
			v = map[string]any{segs[i].name: v}
		}
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), "VALUE", raw, 1)
}

// Every integer-typed key refuses a float (integral or not, in either
// syntax), a quoted number and a word, at the value's position and naming
// the key; an integer decodes.
func TestIntegerKeys(t *testing.T) {
	keys := intKeys(reflect.TypeFor[Spec](), "")
	for _, want := range []string{"region.channels", "region.key_groups", "runtime.ring_size", "source.generator.seed",
		"source.generator.count", "source.generator.keys", "source.csv.parallelism", "source.union[0].csv.parallelism", "checkpoint.retain",
		"region.elastic.max_channels", "pipeline[0].lookup_http.max_cost"} {
		if !slices.Contains(keys, want) {
			t.Errorf("integer key %s not found (found %v)", want, keys)
		}
	}
	for _, key := range keys {
		for _, raw := range []string{"2.5", "8.0", "1e3", "-1.5", `"4"`, "four", "true", "[1]"} {
			text := document(t, key, raw)
			_, err := Parse("job.yaml", []byte(text))
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%s: %s: got %v, want a *jobfile.Error\n%s", key, raw, err, text)
				continue
			}
			line := strings.Split(text, "\n")[max(e.Line-1, 0)]
			if e.Path != key || !strings.HasPrefix(e.Msg, "expected an integer, not ") || e.Line == 0 ||
				!strings.HasPrefix(line[min(e.Column-1, len(line)):], raw) {
				t.Errorf("%s: %s: got %v (path %q), want the path, \"expected an integer\" and the value's position\n%s", key, raw, err, e.Path, text)
			}
		}
		if _, err := Parse("job.yaml", []byte(document(t, key, "7"))); err != nil {
			t.Errorf("%s: 7: %v", key, err)
		}
	}
}

// An integer key decodes the integer forms YAML has; a null is the key's
// default.
func TestIntegerForms(t *testing.T) {
	for raw, want := range map[string]int{"12": 12, "+12": 12, "1_000": 1000, "0x10": 16, "0o17": 15, "": 0, "~": 0} {
		f, err := Parse("job.yaml", []byte("runtime:\n  ring_size: "+raw+"\n"))
		if err != nil {
			t.Errorf("ring_size: %s: %v", raw, err)
			continue
		}
		if got := f.Spec.Runtime.RingSize; got != want {
			t.Errorf("ring_size: %s decoded as %d, want %d", raw, got, want)
		}
	}
}
