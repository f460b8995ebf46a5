package window

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The calendar grid on random instants from 1900 to 2100 in zones with
// DST (one with a 30-minute change, one that changed at midnight, one a
// half hour off UTC): every pane holds its instants, starts on the first
// instant of its local period, ends where the next begins, and the cache
// answers as the calendar does.
func TestCalendarGrid(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, zone := range []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []Calendar{{Size: Day}, {Size: Week, WeekStart: time.Monday}, {Size: Week, WeekStart: time.Sunday}, {Size: Month}, {Size: Quarter}, {Size: Year},
			{Size: Week, Slide: Day}, {Size: Quarter, Slide: Month}, {Size: Year, Slide: Month}, {Size: Year, Slide: Quarter}} {
			c.Loc = loc
			g, err := newGrid(&Spec{Calendar: &c})
			if err != nil {
				t.Fatal(err)
			}
			k, _ := c.panes()
			lo := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			hi := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			for i := 0; i < 3000; i++ {
				ts := lo + rnd.Int64N(hi-lo)
				if i%2 == 1 { // near the last one: cache hits
					ts += rnd.Int64N(int64(200 * time.Hour))
				}
				start, next, end := g.pane(ts)
				if !(start <= ts && ts < next && next <= end) {
					t.Fatalf("%s %s: %v in [%v, %v), end %v", zone, c.String(), at(ts, loc), at(start, loc), at(next, loc), at(end, loc))
				}
				if f := g.cal.floor(ts); f != start {
					t.Fatalf("%s %s: %v: cached pane %v, calendar %v", zone, c.String(), at(ts, loc), at(start, loc), at(f, loc))
				}
				if g.cal.floor(next) != next || g.cal.floor(start-1) == start {
					t.Fatalf("%s %s: pane [%v, %v) does not start a period", zone, c.String(), at(start, loc), at(next, loc))
				}
				if g.start(end) > start || g.cal.add(start, k) != end {
					t.Fatalf("%s %s: window [%v, %v) misses pane %v", zone, c.String(), at(g.start(end), loc), at(end, loc), at(start, loc))
				}
				l := time.Unix(0, start).In(loc)
				y, m, d := l.Date()
				want := map[Period]bool{Day: true, Week: l.Weekday() == c.WeekStart || c.Slide == Day, Month: d == 1,
					Quarter: d == 1 && (m-1)%3 == 0, Year: d == 1 && m == 1}[c.slide()]
				if prev := time.Unix(0, start-1).In(loc); !want || prev.Day() == d || y < 1899 {
					t.Fatalf("%s %s: pane starts %v", zone, c.String(), l)
				}
			}
		}
	}
}

func at(ns int64, loc *time.Location) string {
	return time.Unix(0, ns).In(loc).Format(time.RFC3339)
}

// A checkpoint records how a window cuts time (OperatorDef.State): a
// restore into a window of another calendar size, slide, zone or week
// start, or into fixed 24-hour windows, does not match.
func TestCalendarState(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	seen := map[string]string{}
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"24h", Spec{Size: int64(24 * time.Hour)}},
		{"1d", Spec{Calendar: &Calendar{Size: Day}}},
		{"1d paris", Spec{Calendar: &Calendar{Size: Day, Loc: paris}}},
		{"1w", Spec{Calendar: &Calendar{Size: Week, WeekStart: time.Monday}}},
		{"1w sunday", Spec{Calendar: &Calendar{Size: Week, WeekStart: time.Sunday}}},
		{"1w by 1d", Spec{Calendar: &Calendar{Size: Week, Slide: Day}}},
		{"1mo", Spec{Calendar: &Calendar{Size: Month}}},
		{"1q", Spec{Calendar: &Calendar{Size: Quarter}}},
		{"1q by 1mo", Spec{Calendar: &Calendar{Size: Quarter, Slide: Month}}},
		{"1y", Spec{Calendar: &Calendar{Size: Year}}},
	} {
		c.spec.Name, c.spec.Key, c.spec.Aggs = "w", []string{"k"}, []Agg{{Name: "n", Func: Count}}
		def, err := New(c.spec, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[def.State]; ok {
			t.Errorf("%s and %s have the same state %q", c.name, other, def.State)
		}
		seen[def.State] = c.name
	}
	def, _ := New(Spec{Name: "w", Key: []string{"k"}, Aggs: []Agg{{Name: "n", Func: Count}}, Calendar: &Calendar{Size: Day, Loc: paris}}, scriptSchema)
	if want := "window size=1d slide=1d time_zone=Europe/Paris "; def.State[:len(want)] != want {
		t.Errorf("state %q", def.State)
	}
}
