// Package timeparse reads timestamps as input files write them: the
// default forms (RFC 3339, "2006-01-02 15:04:05", a date, ns since the
// epoch), a Go layout ("Jan 2 2006"), a strftime format ("%b %d %Y", read
// with github.com/itchyny/timefmt-go), or a number of s, ms, µs or ns since
// the epoch, in a time zone for values that carry no offset.
//
// A Format is the immutable description, checked once when a job loads;
// a Parser is one goroutine's reader of it, with the small cache that makes
// repeated values cheap. Parsing a valid value allocates nothing.
//
// Results are ns since the Unix epoch (core.Timestamp's unit).
package timeparse

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time_zone: names resolve on machines without a zone database

	"github.com/itchyny/timefmt-go"
)

// Format says how one timestamp column is written. It is immutable and
// safe to share; each goroutine reads with its own Parser.
type Format struct {
	layout   string // Go layout or strftime; "" = the default forms
	strftime bool
	unit     int64 // ns per unit for numbers since the epoch; 0 = text
	unitName string
	loc      *time.Location // for values without an offset; never nil
}

// Units are the unit: names, with their length in ns.
var Units = map[string]int64{"s": int64(time.Second), "ms": int64(time.Millisecond), "us": int64(time.Microsecond), "ns": 1}

// Default is the format of a timestamp column that says nothing: the
// default forms, in UTC.
var Default = &Format{loc: time.UTC}

// New checks and returns a format. layout is a Go layout, or strftime when
// it holds a '%' ("" = the default forms); unit ("" = none) is s, ms, us
// or ns and says the values are numbers since the epoch (exclusive with
// layout); zone ("" = UTC) is an IANA name (Europe/Paris) or UTC, the zone
// of values that carry no offset (not with unit: such numbers have none).
// Errors name the offending setting by its job-file key (format, unit,
// time_zone) so a loader can place them.
func New(layout, unit, zone string) (*Format, error) {
	f := &Format{layout: layout, strftime: strings.Contains(layout, "%"), unitName: unit, loc: time.UTC}
	if unit != "" {
		u, ok := Units[unit]
		if !ok {
			return nil, &SettingError{Key: "unit", Err: fmt.Errorf("unit %q: expected s, ms, us or ns", unit)}
		}
		if layout != "" {
			return nil, &SettingError{Key: "unit", Err: errors.New("unit (a number since the epoch) and format exclude each other")}
		}
		if zone != "" {
			return nil, &SettingError{Key: "time_zone", Err: errors.New("time_zone does not apply to numbers since the epoch (unit), which are UTC")}
		}
		f.unit = u
	}
	if zone != "" {
		loc, err := Zone(zone)
		if err != nil {
			return nil, &SettingError{Key: "time_zone", Err: err}
		}
		f.loc = loc
	}
	if layout != "" {
		if err := f.check(); err != nil {
			return nil, &SettingError{Key: "format", Err: err}
		}
	}
	return f, nil
}

// Zone loads an IANA time zone (Europe/Paris, America/New_York) or UTC
// from the embedded database. "Local" is refused: a job's results must
// not depend on the machine it runs on.
func Zone(name string) (*time.Location, error) {
	if name == "Local" || name == "" {
		return nil, fmt.Errorf("time zone %q: expected an IANA name such as Europe/Paris, or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (expected an IANA name such as Europe/Paris, America/New_York, or UTC)", name)
	}
	return loc, nil
}

// SettingError is a Format setting New refused; Key is its job-file key.
type SettingError struct {
	Key string
	Err error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// check refuses a layout that names no date or time element (a Go layout
// must use the reference time, Mon Jan 2 15:04:05 MST 2006) or that cannot
// read back what it writes (an unknown strftime directive).
func (f *Format) check() error {
	a := time.Date(2001, 2, 3, 16, 5, 6, 789_000_000, time.UTC)
	b := time.Date(1999, 12, 28, 9, 44, 57, 0, time.UTC)
	if f.format(a) == f.format(b) {
		if f.strftime {
			return fmt.Errorf("format %q has no date or time directive (such as %%Y %%m %%d %%H %%M %%S %%b)", f.layout)
		}
		return fmt.Errorf("format %q has no date or time element: a Go layout writes the reference time Mon Jan 2 15:04:05 MST 2006 (e.g. \"Jan 2 2006\", \"02/01/2006 15:04\"); a strftime format uses %%Y, %%m, %%d, …", f.layout)
	}
	s := f.format(a)
	if _, err := f.parseLayout(s); err != nil {
		return fmt.Errorf("format %q cannot read what it writes (%q): %v", f.layout, s, cause(err))
	}
	return nil
}

func (f *Format) format(t time.Time) string {
	if f.strftime {
		return timefmt.Format(t, f.layout)
	}
	return t.Format(f.layout)
}

// cause is err without the input and layout quoted in front of it.
func cause(err error) string {
	if u := errors.Unwrap(err); u != nil {
		return u.Error()
	}
	var pe *time.ParseError
	if errors.As(err, &pe) && pe.Message != "" {
		return strings.TrimPrefix(pe.Message, ": ")
	}
	return err.Error()
}

// Layout is the format's layout ("" for the default forms or a unit).
func (f *Format) Layout() string { return f.layout }

// Unit is the length of the format's unit in ns, 0 when values are text.
func (f *Format) Unit() int64 { return f.unit }

// Location is the zone of values without an offset (UTC by default).
func (f *Format) Location() *time.Location { return f.loc }

// Expected says what values of the format look like, for error messages.
func (f *Format) Expected() string {
	switch {
	case f.unit != 0:
		return unitWords[f.unitName] + " since the epoch"
	case f.layout != "":
		return fmt.Sprintf("format %q", f.layout)
	}
	return `RFC 3339, "2006-01-02 15:04:05", a date, or ns since the epoch`
}

var unitWords = map[string]string{"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}

// Parser reads values of one Format. It keeps the last value it parsed
// and its result, so a column whose values repeat (daily dates on every
// row of a day) parses each distinct value once. Not safe for concurrent
// use: each goroutine takes its own (Format.Parser).
type Parser struct {
	f      *Format
	last   []byte // the last value parsed by layout, a copy
	lastNS int64
	cached bool
}

// Parser returns a new reader of f.
func (f *Format) Parser() *Parser { return &Parser{f: f} }

// Format is the format p reads.
func (p *Parser) Format() *Format { return p.f }

// Parse reads one value, in ns since the epoch. s may alias a buffer the
// caller reuses: Parse keeps no reference to it. The error says what was
// expected; it does not name the field.
func (p *Parser) Parse(s string) (int64, error) {
	f := p.f
	switch {
	case f.unit != 0:
		ns, ok := epoch(s, f.unit)
		if !ok {
			return 0, fmt.Errorf("%q is not a number of %s since the epoch", s, unitWords[f.unitName])
		}
		return ns, nil
	case f.layout == "":
		return parseDefault(s, f.loc)
	}
	if p.cached && string(p.last) == s {
		return p.lastNS, nil
	}
	t, err := f.parseLayout(s)
	if err != nil {
		return 0, fmt.Errorf("%q does not match format %q: %s", s, f.layout, cause(err))
	}
	ns := t.UnixNano()
	p.last, p.lastNS, p.cached = append(p.last[:0], s...), ns, true
	return ns, nil
}

func (f *Format) parseLayout(s string) (time.Time, error) {
	if f.strftime {
		return timefmt.ParseInLocation(s, f.layout, f.loc)
	}
	return time.ParseInLocation(f.layout, s, f.loc)
}

// ParseNumber reads a JSON number (s is its text): with a unit, a number
// of units since the epoch (a fraction is kept down to the ns); without,
// an integral number of ns. A format with a layout takes no numbers.
func (p *Parser) ParseNumber(s string) (int64, error) {
	f := p.f
	switch {
	case f.unit != 0:
		return p.Parse(s)
	case f.layout != "":
		return 0, fmt.Errorf("%s is a number, not text in format %q", s, f.layout)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && x != math.Trunc(x):
		return 0, fmt.Errorf("%s is not a timestamp (ns since the epoch): not integral (give unit: s, ms or us for numbers in other units)", s)
	case err != nil || x < -(1<<63) || x >= 1<<63:
		return 0, fmt.Errorf("%s is not a timestamp (ns since the epoch): out of range", s)
	}
	return int64(x), nil
}

// epoch reads a decimal number of units (unit ns each) since the epoch:
// an optional sign, digits, an optional fraction; other forms (1.7e9) go
// through strconv.ParseFloat. Digits of the fraction below 1 ns are
// dropped (truncated toward zero). ok is false for text that is no number
// and for values outside int64 ns (years 1678–2262).
func epoch(s string, unit int64) (ns int64, ok bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var whole uint64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if whole > math.MaxInt64/10 {
			return 0, false
		}
		whole = whole*10 + uint64(s[i]-'0')
	}
	digits := i - start
	var frac int64
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for step := unit / 10; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			frac += int64(s[i]-'0') * step
			step /= 10
		}
		digits += i - fs
	}
	if i != len(s) || digits == 0 {
		if x, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, "eE") {
			y := x * float64(unit)
			if y >= -(1<<63) && y < 1<<63 {
				return int64(y), true
			}
		}
		return 0, false
	}
	if whole > uint64(math.MaxInt64/unit) {
		return 0, false
	}
	ns = int64(whole)*unit + frac
	if ns < 0 {
		return 0, false
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// isoFast reads the default forms by hand: YYYY-MM-DD, optionally
// followed by T or a space, hh:mm:ss, a fraction of 1–9 digits, and Z or
// ±hh:mm. A value without an offset is in loc. ok is false for anything
// else, and for out-of-range fields, which defaultSlow then reports (or
// reads, for forms this does not know).
func isoFast(s string, loc *time.Location) (int64, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) {
		return 0, false
	}
	var h, mi, sec, nsec int
	off, zoned := 0, false
	if rest := s[10:]; rest != "" {
		if len(rest) < 9 || (rest[0] != 'T' && rest[0] != ' ') || rest[3] != ':' || rest[6] != ':' {
			return 0, false
		}
		var okh, okm, oks bool
		h, okh = digits(rest[1:3])
		mi, okm = digits(rest[4:6])
		sec, oks = digits(rest[7:9])
		if !okh || !okm || !oks || h > 23 || mi > 59 || sec > 59 {
			return 0, false
		}
		rest = rest[9:]
		if rest != "" && rest[0] == '.' {
			n := 1
			for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
				n++
			}
			if n == 1 || n > 10 {
				return 0, false
			}
			for k := 1; k < 10; k++ {
				nsec *= 10
				if k < n {
					nsec += int(rest[k] - '0')
				}
			}
			rest = rest[n:]
		}
		switch {
		case rest == "":
		case rest == "Z":
			zoned = true
		case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
			oh, ok1 := digits(rest[1:3])
			om, ok2 := digits(rest[4:6])
			if !ok1 || !ok2 || oh > 23 || om > 59 {
				return 0, false
			}
			off, zoned = (oh*60+om)*60, true
			if rest[0] == '-' {
				off = -off
			}
		default:
			return 0, false
		}
	}
	if !zoned && loc != time.UTC {
		return time.Date(y, time.Month(mo), d, h, mi, sec, nsec, loc).UnixNano(), true
	}
	secs := DaysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+sec) - int64(off)
	return secs*1e9 + int64(nsec), true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// DaysFromCivil is the number of days from 1970-01-01 to the proleptic
// Gregorian date y-m-d (m 1–12, d 1–31), negative before it (H. Hinnant,
// "chrono-Compatible Low-Level Date Algorithms", days_from_civil).
func DaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// ParseDefault reads a value in one of the default forms (RFC 3339,
// "2006-01-02 15:04:05" with optional fraction, "2006-01-02T15:04:05", a
// date, ns since the epoch); values without an offset are UTC. It
// allocates only for its error.
func ParseDefault(s string) (int64, error) { return parseDefault(s, time.UTC) }

func parseDefault(s string, loc *time.Location) (int64, error) {
	if ns, ok := isoFast(s, loc); ok {
		return ns, nil
	}
	return defaultSlow(s, loc)
}

var defaultLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"}

// defaultSlow reads the default forms with package time (what isoFast
// does not take), then an integer number of ns.
func defaultSlow(s string, loc *time.Location) (int64, error) {
	for _, l := range defaultLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t.UnixNano(), nil
		}
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	return 0, fmt.Errorf("%q is not a timestamp (expected RFC 3339, \"2006-01-02 15:04:05\", a date, or ns since the epoch; give format: for other forms)", s)
}
