package timeparse

import (
	"testing"
	"time"
)

// BenchmarkParse reads hourly values (each distinct) and daily values
// (each repeated 24 times, as dates on hourly rows) in each format. The
// baseline is "default/time-loop": the default forms read by trying
// package time's layouts in turn, as core.ParseTime did before this
// package, next to "default/fast", the hand reader.
func BenchmarkParse(b *testing.B) {
	t0 := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	hourly := func(layout string, strf bool) []string {
		out := make([]string, 1024)
		for i := range out {
			x := t0.Add(time.Duration(i) * time.Hour)
			if strf {
				out[i] = (&Format{layout: layout, strftime: true}).format(x)
			} else {
				out[i] = x.Format(layout)
			}
		}
		return out
	}
	daily := func(vals []string) []string {
		out := make([]string, len(vals))
		for i := range out {
			out[i] = vals[i/24*24]
		}
		return out
	}
	iso := hourly("2006-01-02 15:04:05", false)
	goLayout := hourly("Jan 2 2006 15:04", false)
	strf := hourly("%b %d %Y %H:%M", true)
	goDate := daily(hourly("Jan 2 2006", false))
	strfDate := daily(hourly("%b %d %Y", true))
	cases := []struct {
		name, layout, unit, zone string
		vals                     []string
		parse                    func(p *Parser, s string) (int64, error)
	}{
		{"default/time-loop", "", "", "", iso, func(_ *Parser, s string) (int64, error) { return defaultSlow(s, time.UTC) }},
		{"default/fast", "", "", "", iso, nil},
		{"default/fast-paris", "", "", "Europe/Paris", iso, nil},
		{"go-layout/hourly", "Jan 2 2006 15:04", "", "", goLayout, nil},
		{"strftime/hourly", "%b %d %Y %H:%M", "", "", strf, nil},
		{"go-layout/daily", "Jan 2 2006", "", "", goDate, nil},
		{"strftime/daily", "%b %d %Y", "", "", strfDate, nil},
		{"unit-ms", "", "ms", "", []string{"1774656000000", "1774659600000", "1774663200123"}, nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f, err := New(c.layout, c.unit, c.zone)
			if err != nil {
				b.Fatal(err)
			}
			p := f.Parser()
			parse := c.parse
			if parse == nil {
				parse = (*Parser).Parse
			}
			b.ReportAllocs()
			for i := range b.N {
				if _, err := parse(p, c.vals[i%len(c.vals)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
