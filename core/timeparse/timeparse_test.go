package timeparse

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

func ns(t *testing.T, s string) int64 {
	t.Helper()
	x, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return x.UnixNano()
}

func TestParse(t *testing.T) {
	cases := []struct {
		layout, unit, zone, in string
		want                   string // RFC 3339
	}{
		{"%b %d %Y", "", "", "Jan 1 2000", "2000-01-01T00:00:00Z"},
		{"%b %d %Y", "", "", "Feb 29 2000", "2000-02-29T00:00:00Z"},
		{"%b %d %Y", "", "America/New_York", "Jan 1 2000", "2000-01-01T05:00:00Z"},
		{"Jan 2 2006", "", "", "Jan 1 2000", "2000-01-01T00:00:00Z"},
		{"Jan 2 2006", "", "Europe/Paris", "Jul 14 2026", "2026-07-13T22:00:00Z"},
		{"02/01/2006 15:04", "", "Europe/Paris", "29/03/2026 01:30", "2026-03-29T00:30:00Z"}, // CET
		{"02/01/2006 15:04", "", "Europe/Paris", "29/03/2026 03:30", "2026-03-29T01:30:00Z"}, // CEST
		{"%d/%m/%Y %H:%M:%S", "", "", "31/12/1999 23:59:58", "1999-12-31T23:59:58Z"},
		{"%Y-%m-%dT%H:%M:%S%z", "", "Europe/Paris", "2026-01-05T10:00:00+0200", "2026-01-05T08:00:00Z"}, // the offset wins
		{"", "s", "", "1700000000", "2023-11-14T22:13:20Z"},
		{"", "s", "", "1700000000.25", "2023-11-14T22:13:20.25Z"},
		{"", "s", "", "-1.5", "1969-12-31T23:59:58.5Z"},
		{"", "s", "", "1.7e9", "2023-11-14T22:13:20Z"},
		{"", "ms", "", "1700000000123", "2023-11-14T22:13:20.123Z"},
		{"", "ms", "", "1700000000123.456789", "2023-11-14T22:13:20.123456789Z"},
		{"", "us", "", "1700000000123456", "2023-11-14T22:13:20.123456Z"},
		{"", "ns", "", "1700000000123456789", "2023-11-14T22:13:20.123456789Z"},
		{"", "", "", "2026-03-29 02:30:00", "2026-03-29T02:30:00Z"},
		{"", "", "Europe/Paris", "2026-10-25 12:00:00", "2026-10-25T11:00:00Z"},
		{"", "", "Europe/Paris", "2026-03-29 02:30:00", "2026-03-29T01:30:00Z"}, // does not exist: the offset before
		{"", "", "Europe/Paris", "2026-10-25 02:30:00", "2026-10-25T01:30:00Z"}, // twice: the second, in winter time
		{"2006-01-02 15:04", "", "Europe/Paris", "2026-10-25 02:30", "2026-10-25T01:30:00Z"},
		{"%Y-%m-%d %H:%M", "", "Europe/Paris", "2026-10-25 02:30", "2026-10-25T01:30:00Z"},
		{"", "", "Europe/Paris", "2026-10-25T12:00:00Z", "2026-10-25T12:00:00Z"},
		{"", "", "Europe/Paris", "2026-07-01", "2026-06-30T22:00:00Z"},
		{"", "", "", "2026-07-01T10:00:00.5-02:30", "2026-07-01T12:30:00.5Z"},
		{"", "", "", "1700000000000000000", "2023-11-14T22:13:20Z"},
	}
	for _, c := range cases {
		f, err := New(c.layout, c.unit, c.zone)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		got, err := f.Parser().Parse(c.in)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if want := ns(t, c.want); got != want {
			t.Errorf("%+v: got %s, want %s", c, time.Unix(0, got).UTC().Format(time.RFC3339Nano), c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ layout, unit, in, want string }{
		{"%b %d %Y", "", "Jan 32 2000", `"Jan 32 2000" does not match format "%b %d %Y"`},
		{"Jan 2 2006", "", "2000-01-01", `"2000-01-01" does not match format "Jan 2 2006"`},
		{"", "s", "17e", `"17e" is not a number of seconds since the epoch`},
		{"", "ms", "", `"" is not a number of milliseconds since the epoch`},
		{"", "s", "99999999999999999999", `is not a number of seconds`},
		{"", "", "2026-02-30", `"2026-02-30" is not a timestamp`},
		{"", "", "Jan 1 2000", `give format: for other forms`},
	}
	for _, c := range cases {
		f, err := New(c.layout, c.unit, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Parser().Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c, err, c.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct{ layout, unit, zone, key, want string }{
		{"yyyy-mm-dd", "", "", "format", "has no date or time element"},
		{"%Q %Y", "", "", "format", "cannot read what it writes"},
		{"%%", "", "", "format", "has no date or time directive"},
		{"", "sec", "", "unit", `unit "sec": expected s, ms, us or ns`},
		{"%Y", "s", "", "unit", "exclude each other"},
		{"", "s", "Europe/Paris", "time_zone", "does not apply"},
		{"", "", "Europe/Pariss", "time_zone", `unknown time zone "Europe/Pariss"`},
		{"", "", "Local", "time_zone", "expected an IANA name"},
	}
	for _, c := range cases {
		_, err := New(c.layout, c.unit, c.zone)
		se, ok := err.(*SettingError)
		if !ok || se.Key != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v", c, err)
		}
	}
}

// TestDefaultFastMatchesTime checks the hand-written reader of the default
// forms against package time on random instants and zones.
func TestDefaultFastMatchesTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	paris, _ := Zone("Europe/Paris")
	for i := 0; i < 20000; i++ {
		x := time.Unix(r.Int64N(1<<34)-1<<33, r.Int64N(1e9)).UTC()
		loc := time.UTC
		if i%2 == 1 {
			loc = paris
		}
		for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02", "2006-01-02T15:04:05-07:00"} {
			s := x.In(loc).Format(l)
			want, err := time.ParseInLocation(l, s, loc)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := isoFast(s, loc)
			if !ok || got != want.UnixNano() {
				t.Fatalf("%q in %s: fast %d %v, time %d", s, loc, got, ok, want.UnixNano())
			}
		}
	}
}

func TestParseAllocatesNothing(t *testing.T) {
	cases := []struct{ layout, unit, zone string }{
		{"", "", ""}, {"", "", "Europe/Paris"}, {"%b %d %Y", "", ""}, {"Jan 2 2006 15:04", "", "Europe/Paris"}, {"", "ms", ""},
	}
	for _, c := range cases {
		f, err := New(c.layout, c.unit, c.zone)
		if err != nil {
			t.Fatal(err)
		}
		p := f.Parser()
		vals := sample(f, 64)
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			if _, err := p.Parse(vals[i%len(vals)]); err != nil {
				t.Fatal(err)
			}
			i++
		}); n != 0 {
			t.Errorf("%+v: %v allocs per value", c, n)
		}
	}
}

// sample writes n hourly instants from 2026-03-28 in f.
func sample(f *Format, n int) []string {
	out := make([]string, n)
	t0 := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	for i := range out {
		x := t0.Add(time.Duration(i) * time.Hour)
		switch {
		case f.unit != 0:
			out[i] = strconv.FormatInt(x.UnixNano()/f.unit, 10)
		case f.layout == "":
			out[i] = x.In(f.loc).Format("2006-01-02 15:04:05")
		default:
			out[i] = f.format(x.In(f.loc))
		}
	}
	return out
}
