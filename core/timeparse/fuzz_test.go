package timeparse

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// FuzzDefaultForms (scripts/fuzz.sh fuzzes it; the test tiers run its
// seeds): whatever the text, the hand reader of the default forms either
// declines it or agrees with package time reading one of the layouts,
// in UTC and in a zone with DST; and the number reader either declines a
// text or reads what strconv reads.
func FuzzDefaultForms(f *testing.F) {
	for _, s := range []string{"2024-01-01", "2024-02-29T23:59:59.999999999Z", "2024-02-30 00:00:00",
		"2026-03-29 02:30:00", "2026-10-25T02:30:00+02:00", "0001-01-01T00:00:00-23:59", "2024-01-01 24:00:00",
		"2024-1-01", "2024-01-01T10:00:00.Z", "9999-12-31T23:59:59.1234567890Z", "1700000000.5", "-1.25", "1e3"} {
		f.Add(s)
	}
	paris, err := Zone("Europe/Paris")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, loc := range []*time.Location{time.UTC, paris} {
			ns, ok := isoFast(s, loc)
			if !ok {
				continue
			}
			agree := false
			for _, l := range append(defaultLayouts, "2006-01-02 15:04:05.999999999Z07:00") {
				if x, err := time.ParseInLocation(l, s, loc); err == nil && x.UnixNano() == ns {
					agree = true
				}
			}
			if !agree {
				t.Fatalf("%q in %s: the hand reader gives %d, package time another value or an error", s, loc, ns)
			}
		}
		for _, unit := range []int64{1e9, 1e6, 1} {
			ns, ok := epoch(s, unit)
			if !ok {
				continue
			}
			if i, err := strconv.ParseInt(s, 10, 64); err == nil && i == i*unit/unit && ns != i*unit {
				t.Fatalf("%q × %d ns: %d, strconv %d", s, unit, ns, i*unit)
			}
			if x, err := strconv.ParseFloat(s, 64); err != nil || math.Abs(x*float64(unit)-float64(ns)) > 1+math.Abs(x*float64(unit))*1e-9 {
				t.Fatalf("%q × %d ns: %d, strconv %v (%v)", s, unit, ns, x, err)
			}
		}
	})
}
