package window

import (
	"fmt"
	"time"
)

// Period is a calendar length: a day, week, month, quarter or year of
// local time in a zone. Its length in ns varies (a day in Europe/Paris is
// 23 or 25 hours on the days the clocks change; months and years vary
// anyway), so calendar windows are cut by the calendar, not by ns.
type Period uint8

// The calendar periods.
const (
	Day Period = iota + 1
	Week
	Month
	Quarter
	Year
)

var periodNames = [...]string{"", "1d", "1w", "1mo", "1q", "1y"}

func (p Period) String() string {
	if int(p) < len(periodNames) {
		return periodNames[p]
	}
	return fmt.Sprintf("period(%d)", uint8(p))
}

// Calendar makes a window's windows calendar periods of local time.
//
// A tumbling calendar window (Slide 0 or equal to Size) is one Size
// period: the local day from midnight to midnight, the week from midnight
// at the start of WeekStart, the month from the 1st, the quarter from
// January, April, July or October 1st, the year from January 1st. A
// sliding one is a whole number of Slide periods that is the same for
// every window, starting at every Slide period: Size/Slide is one of
// 1w/1d (7 days), 1q/1mo (3 months), 1y/1mo (12 months) and 1y/1q (4
// quarters). Other pairs (1mo/1d, 1d over hours) are refused: their
// number of panes is not fixed.
//
// Start and end are the instants where the local periods begin: local
// midnight, or, on a day whose clocks go forward at midnight, the first
// instant of the date.
type Calendar struct {
	Size, Slide Period
	// Loc is the zone whose local time the periods follow (nil: UTC).
	Loc *time.Location
	// WeekStart is the first day of a 1w window (ISO 8601: Monday). It
	// does not apply to 1w/1d sliding windows, which start every day.
	WeekStart time.Weekday
}

// Check reports whether the size and slide make calendar windows (see
// Calendar).
func (c *Calendar) Check() error {
	if c.Size < Day || c.Size > Year || c.Slide > Year {
		return fmt.Errorf("calendar size %s, slide %s: expected 1d, 1w, 1mo, 1q or 1y", c.Size, c.Slide)
	}
	_, err := c.panes()
	return err
}

// panes returns the number of Slide periods in a Size one, or an error
// for a pair that has no fixed number.
func (c *Calendar) panes() (int, error) {
	slide := c.Slide
	if slide == 0 || slide == c.Size {
		return 1, nil
	}
	switch [2]Period{c.Size, slide} {
	case [2]Period{Week, Day}:
		return 7, nil
	case [2]Period{Quarter, Month}:
		return 3, nil
	case [2]Period{Year, Month}:
		return 12, nil
	case [2]Period{Year, Quarter}:
		return 4, nil
	}
	return 0, fmt.Errorf("slide %s does not divide size %s into a fixed number of periods (calendar windows slide as 1w by 1d, 1q by 1mo, 1y by 1mo or 1q)", slide, c.Size)
}

// String describes the calendar for checkpoints: a restored window must
// cut time the same way.
func (c *Calendar) String() string {
	s := fmt.Sprintf("size=%s slide=%s time_zone=%s", c.Size, c.slide(), c.loc())
	if c.Size == Week && c.slide() == Week {
		s += " week_start=" + c.WeekStart.String()
	}
	return s
}

func (c *Calendar) slide() Period {
	if c.Slide == 0 {
		return c.Size
	}
	return c.Slide
}

func (c *Calendar) loc() *time.Location {
	if c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

// grid cuts event time into panes and windows: pane starts, the window
// ends a pane belongs to, a window's start from its end. Epoch-aligned
// fixed windows use arithmetic on ns. Calendar windows ask the calendar
// (a zone lookup and civil-date arithmetic, 100–200 ns) once per pane and
// keep the answer in a direct-mapped cache indexed by the hour of event
// time: a pane is at least 23 hours long, so records within a few hundred
// hours of each other, in any order, find their pane in the cache.
// BenchmarkProcessCalendar measures it. Not safe for concurrent use: each
// operator instance has its own.
type grid struct {
	size, slide int64 // fixed windows, ns
	cal         *calGrid
}

type calGrid struct {
	unit  Period         // the pane: the slide period
	k     int            // panes per window
	loc   *time.Location // never nil
	wd    time.Weekday   // week start, for weekly panes
	cache [paneCache]span
}

// paneCache is the number of panes calGrid keeps (by hour of event time).
const paneCache = 256

// span is a pane [lo, hi) and the end of the last window holding it.
type span struct{ lo, hi, end int64 }

func newGrid(spec *Spec) (grid, error) {
	c := spec.Calendar
	if c == nil {
		return grid{size: spec.Size, slide: spec.Slide}, nil
	}
	k, err := c.panes()
	if err != nil {
		return grid{}, err
	}
	return grid{cal: &calGrid{unit: c.slide(), k: k, loc: c.loc(), wd: c.WeekStart}}, nil
}

// pane returns the pane holding event time t: its start, the start of
// the next one, and the end of the last window holding it.
func (g *grid) pane(t int64) (start, next, lastEnd int64) {
	if g.cal == nil {
		start = floorDiv(t, g.slide) * g.slide
		return start, start + g.slide, start + g.size
	}
	c := g.cal
	e := &c.cache[uint64(floorDiv(t, int64(time.Hour)))%paneCache]
	if e.lo <= t && t < e.hi { // an empty entry (lo = hi = 0) holds nothing
		return e.lo, e.hi, e.end
	}
	lo := c.floor(t)
	*e = span{lo: lo, hi: c.add(lo, 1), end: c.add(lo, c.k)}
	return e.lo, e.hi, e.end
}

// next returns the start of the pane after the one starting at p.
func (g *grid) next(p int64) int64 {
	_, next, _ := g.pane(p)
	return next
}

// lastEnd returns the end of the last window holding the pane starting
// at p.
func (g *grid) lastEnd(p int64) int64 {
	_, _, end := g.pane(p)
	return end
}

// start returns the start of the window ending at end.
func (g *grid) start(end int64) int64 {
	if g.cal == nil {
		return end - g.size
	}
	return g.cal.add(end, -g.cal.k)
}

// floor returns the start of the local period holding t.
func (c *calGrid) floor(t int64) int64 {
	y, m, d := time.Unix(0, t).In(c.loc).Date()
	switch c.unit {
	case Day:
	case Week:
		wd := time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
		d -= (int(wd) - int(c.wd) + 7) % 7
	case Month:
		d = 1
	case Quarter:
		m, d = (m-1)/3*3+1, 1
	case Year:
		m, d = 1, 1
	}
	return c.midnight(y, m, d)
}

// midnight returns the first instant of local date y-m-d (normalized as
// time.Date does: day 0 is the last of the month before). Where the clocks
// go forward at midnight (America/Sao_Paulo until 2019) 00:00 does not
// exist and time.Date may answer an instant of the day before; the day
// then starts at the change.
func (c *calGrid) midnight(y int, m time.Month, d int) int64 {
	y, m, d = time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Date()
	t := time.Date(y, m, d, 0, 0, 0, 0, c.loc)
	if _, _, td := t.Date(); td != d {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			t = end
		}
	}
	return t.UnixNano()
}

// add returns the start of the period n periods after the one starting at
// p (before it for negative n).
func (c *calGrid) add(p int64, n int) int64 {
	y, m, d := time.Unix(0, p).In(c.loc).Date()
	switch c.unit {
	case Day:
		d += n
	case Week:
		d += 7 * n
	case Month:
		m += time.Month(n)
	case Quarter:
		m += time.Month(3 * n)
	case Year:
		y += n
	}
	return c.midnight(y, m, d)
}
