package jobfile

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/window"
)

// aggRe matches an aggregate, fn or fn(arg).
var aggRe = regexp.MustCompile(`^\s*(\w+)\s*(?:\((.*)\))?\s*$`)

// article is t with its indefinite article: "an int64", "a string".
func article(t core.Type) string {
	if t == core.Int64 {
		return "an int64"
	}
	return "a " + t.String()
}

// aggregates reads the aggregates of a window or aggregate operator (name:
// fn(arg)) over its input in; path is the aggregates: key.
func (f *File) aggregates(path string, ms yaml.MapSlice, in *core.Schema) ([]window.Agg, error) {
	if len(ms) == 0 {
		return nil, f.errAt(path, "no aggregates (expected name: fn(arg), e.g. flights: count)")
	}
	var aggs []window.Agg
	for _, it := range ms {
		name := fmt.Sprint(it.Key)
		p := path + "." + name
		src, _ := it.Value.(string)
		m := aggRe.FindStringSubmatch(src)
		mi := aggRe.FindStringSubmatchIndex(src)
		if m == nil {
			return nil, f.errAt(p, "%q: expected fn(arg), e.g. count, sum(distance), count_if(delay > 15)", src)
		}
		fn, err := window.ParseFunc(m[1])
		if err != nil {
			return nil, f.errAt(p, "%v", err)
		}
		a := window.Agg{Name: name, Func: fn}
		arg := strings.TrimSpace(m[2])
		switch fn {
		case window.Count:
			// count and count(*) count records; count(field) counts
			// those where field is not null (SQL).
			if arg != "" && arg != "*" {
				if _, err := in.Lookup(arg); err != nil {
					return nil, f.errAt(p, "count(%s): %v (count counts records; count(field) the records where field is not null; count_if(cond) the matches)", arg, err)
				}
				a.Field = arg
			}
		case window.CountIf:
			if arg == "" {
				return nil, f.errAt(p, "count_if needs a condition, e.g. count_if(delay > 15)")
			}
			lo := mi[4] + strings.Index(m[2], arg)
			prog, err := f.compileIn(p, src, lo, lo+len(arg), in)
			if err != nil {
				return nil, err
			}
			if prog.Type() != core.Bool {
				return nil, f.errAt(p, "count_if(%s) is %s, expected a bool condition", arg, article(prog.Type()))
			}
			a.If = prog
		default:
			if arg == "" {
				return nil, f.errAt(p, "%s needs a field, e.g. %s(delay)", m[1], m[1])
			}
			i, err := in.Lookup(arg)
			if err != nil {
				return nil, f.errAt(p, "%v", err)
			}
			switch t := in.Fields[i].Type; {
			case t == core.Int64 || t == core.Float64:
			case t == core.Timestamp && (fn == window.Min || fn == window.Max):
			default:
				return nil, f.errAt(p, "%s(%s): %q is %s; expected an int64 or float64 field (min and max also take a timestamp)", m[1], arg, arg, article(t))
			}
			a.Field = arg
		}
		aggs = append(aggs, a)
	}
	return aggs, nil
}
