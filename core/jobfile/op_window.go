package jobfile

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"streamd/core"
	"streamd/core/timeparse"
	"streamd/core/window"
)

// WindowSpec is an event-time window aggregate.
type WindowSpec struct {
	Key        []string      `yaml:"key"`
	Size       string        `yaml:"size"`
	Slide      string        `yaml:"slide"`
	Aggregates yaml.MapSlice `yaml:"aggregates"` // name: fn(arg)
	Late       string        `yaml:"late"`
	// AllowedLateness keeps a window's state after it fires, for a
	// duration of event time, and fires it again for each record that
	// arrives in that time (window.Spec.AllowedLateness; default 0: none).
	AllowedLateness string `yaml:"allowed_lateness,omitempty"`
	// TimeZone is the zone whose calendar cuts 1d, 1w, 1mo, 1q and 1y
	// windows ("" = UTC).
	TimeZone string `yaml:"time_zone,omitempty"`
	// WeekStart is the first day of 1w windows (default monday, ISO 8601).
	WeekStart string `yaml:"week_start,omitempty"`
	// LocalAggregation is off (default), on or auto: whether the source
	// stage or every source worker folds each batch per key and pane
	// before the splitter (window.LocalMode).
	LocalAggregation string `yaml:"local_aggregation,omitempty"`
}

// window: {size, slide, time_zone, week_start, key, aggregates, late,
// allowed_lateness, local_aggregation}
// aggregates per key over tumbling or sliding event-time windows
// (window.New): of a fixed length (1h, 15m) aligned to the epoch, or
// calendar periods (1d, 1w, 1mo, 1q, 1y) of a time zone. Keyed: its state is
// checkpointed and described by window.New.
func init() {
	registerOp(opEntry[*WindowSpec]{name: "window", rank: 60, keyed: true, build: buildWindow})
}

func buildWindow(b *opBuild, w *WindowSpec) (core.OperatorDef, error) {
	var def core.OperatorDef
	if b.f.Spec.EventTime == nil {
		return def, b.errAt("", "a window needs event time (expected event_time: with a field or an expr)")
	}
	cal, size, slide, err := b.windowCut(w)
	if err != nil {
		return def, err
	}
	key, err := b.groupKey(w.Key)
	if err != nil {
		return def, err
	}
	aggs, err := b.f.aggregates(b.path+".aggregates", w.Aggregates, b.in)
	if err != nil {
		return def, err
	}
	late := false
	switch w.Late {
	case "", "drop":
	case "dead_letter":
		if b.f.Spec.DeadLetterPath == "" {
			return def, b.errAt(".late", "late: dead_letter needs dead_letter_path")
		}
		late = true
	default:
		return def, b.errAt(".late", "late %q: expected drop or dead_letter", w.Late)
	}
	lateness, err := b.allowedLateness(w.AllowedLateness)
	if err != nil {
		return def, err
	}
	spec := window.Spec{Name: b.name, Key: key, Size: int64(size), Slide: int64(slide), Calendar: cal,
		Aggs: aggs, LateToDeadLetter: late, AllowedLateness: int64(lateness), Groups: b.region.Groups}
	if spec.Local, err = b.localAggregation(w.LocalAggregation, &spec); err != nil {
		return def, err
	}
	return window.New(spec, b.in)
}

// allowedLateness reads allowed_lateness: a duration ≥ 0 (default 0).
func (b *opBuild) allowedLateness(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, b.errAt(".allowed_lateness", "allowed_lateness %q: expected a duration ≥ 0 (e.g. 30s, 5m, 1h)", s)
	}
	return d, nil
}

// windowChange names the first setting, other than allowed_lateness, that
// an update of a window from old to next changes (key is each one's
// grouping key, the region's when not given), with its values; "" when
// only the allowed lateness may differ. Those settings fix the window's
// state layout (size, slide, calendar, key, aggregates) or how records
// reach it (late, local_aggregation).
func windowChange(old, next *WindowSpec, oldKey, nextKey []string, oldState, nextState string) string {
	// The settings that fix the state layout are in the definitions'
	// State (durations in ns, the calendar, the key and the aggregates
	// with their inputs): when it is the same, they are the same however
	// they are written (10s or 10000ms, a tumbling window's slide written
	// out), as a restore compares them.
	same := oldState == nextState
	for _, c := range []struct {
		field, was, is string
		layout         bool
	}{
		{"size", old.Size, next.Size, true},
		{"slide", old.Slide, next.Slide, true},
		{"time_zone", old.TimeZone, next.TimeZone, true},
		{"week_start", old.WeekStart, next.WeekStart, true},
		{"key", strings.Join(oldKey, ", "), strings.Join(nextKey, ", "), true},
		{"aggregates", aggText(old.Aggregates), aggText(next.Aggregates), true},
		{"late", orDefault(old.Late, "drop"), orDefault(next.Late, "drop"), false},
		{"local_aggregation", orDefault(old.LocalAggregation, "off"), orDefault(next.LocalAggregation, "off"), false},
	} {
		if c.layout && same {
			continue
		}
		if c.was != c.is {
			return fmt.Sprintf("%s (%s → %s)", c.field, orNone(c.was), orNone(c.is))
		}
	}
	if !same {
		return fmt.Sprintf("state (%s → %s)", oldState, nextState)
	}
	return ""
}

// orDefault is s, or def when s is not set.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// aggText writes a window's aggregates as the job file does.
func aggText(m yaml.MapSlice) string {
	var parts []string
	for _, it := range m {
		parts = append(parts, fmt.Sprintf("%v: %v", it.Key, it.Value))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func orNone(s string) string {
	if s == "" {
		return "not set"
	}
	return s
}

// localAggregation reads local_aggregation: off (the default), on, or
// auto. on is refused, naming why, for a window that cannot fold exactly
// (window.LocalRefusal: a float aggregate, late: dead_letter) or that is
// not the region's first operator (the local step feeds the splitter);
// auto is then off.
func (b *opBuild) localAggregation(v string, spec *window.Spec) (window.LocalMode, error) {
	var m window.LocalMode
	switch v {
	case "", "off":
		return window.LocalOff, nil
	case "on":
		m = window.LocalOn
	case "auto":
		m = window.LocalAuto
	default:
		return 0, b.errAt(".local_aggregation", "local_aggregation %q: expected off, on or auto", v)
	}
	why := window.LocalRefusal(spec, b.in)
	if why == "" && !strings.HasPrefix(b.path, "region.ops[0].") {
		why = "only the first operator of the region can pre-aggregate before the splitter"
	}
	switch {
	case why == "":
		return m, nil
	case m == window.LocalAuto:
		return window.LocalOff, nil
	}
	return 0, b.errAt(".local_aggregation", "local_aggregation: on: %s", why)
}

// periods are the calendar sizes of a window, as size: and slide: write
// them.
var periods = map[string]window.Period{"1d": window.Day, "1w": window.Week, "1mo": window.Month, "1q": window.Quarter, "1y": window.Year}

var weekdays = map[string]time.Weekday{"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday, "sunday": time.Sunday}

// windowCut reads how a window cuts event time: a calendar (size: 1d, 1w,
// 1mo, 1q or 1y, with time_zone: and week_start:) or a fixed size and
// slide (durations).
func (b *opBuild) windowCut(w *WindowSpec) (cal *window.Calendar, size, slide time.Duration, err error) {
	if p, ok := periods[w.Size]; ok {
		cal = &window.Calendar{Size: p, Loc: time.UTC, WeekStart: time.Monday}
		if w.Slide != "" {
			s, ok := periods[w.Slide]
			if !ok {
				return nil, 0, 0, b.errAt(".slide", "slide %q: a calendar window slides by a calendar period (1d, 1mo, 1q) that divides it: 1w by 1d, 1q by 1mo, 1y by 1mo or 1q", w.Slide)
			}
			cal.Slide = s
			if err := cal.Check(); err != nil {
				return nil, 0, 0, b.errAt(".slide", "%v", err)
			}
		}
		if w.TimeZone != "" {
			if cal.Loc, err = timeparse.Zone(w.TimeZone); err != nil {
				return nil, 0, 0, b.errAt(".time_zone", "%v", err)
			}
		}
		if w.WeekStart != "" {
			d, ok := weekdays[strings.ToLower(w.WeekStart)]
			if !ok {
				return nil, 0, 0, b.errAt(".week_start", "week_start %q: expected monday, tuesday, …, sunday", w.WeekStart)
			}
			if p != window.Week || cal.Slide != 0 && cal.Slide != window.Week {
				return nil, 0, 0, b.errAt(".week_start", "week_start applies to tumbling 1w windows")
			}
			cal.WeekStart = d
		}
		return cal, 0, 0, nil
	}
	if w.TimeZone != "" {
		return nil, 0, 0, b.errAt(".time_zone", "time_zone applies to calendar windows (size 1d, 1w, 1mo, 1q, 1y); a %s window is cut in ns since the epoch", w.Size)
	}
	if w.WeekStart != "" {
		return nil, 0, 0, b.errAt(".week_start", "week_start applies to 1w windows")
	}
	if _, ok := periods[w.Slide]; ok {
		return nil, 0, 0, b.errAt(".slide", "slide %s is a calendar period; the size must be one too (1w, 1q, 1y)", w.Slide)
	}
	if size, err = b.windowDuration(".size", w.Size); err != nil {
		return nil, 0, 0, err
	}
	if size <= 0 {
		return nil, 0, 0, b.errAt(".size", "window size must be a positive duration (e.g. 1h) or a calendar period (1d, 1w, 1mo, 1q, 1y)")
	}
	if w.Slide != "" {
		if slide, err = b.windowDuration(".slide", w.Slide); err != nil {
			return nil, 0, 0, err
		}
	}
	if slide < 0 || slide > size || slide > 0 && size%slide != 0 {
		return nil, 0, 0, b.errAt(".slide", "slide %s must be positive, at most the size %s, and divide it", slide, size)
	}
	return nil, size, slide, nil
}

var manyPeriods = regexp.MustCompile(`^[0-9]+(d|w|mo|q|y)$`)

// windowDuration reads a fixed window length (a Go duration such as 1h or
// 90m), naming the calendar sizes in its error.
func (b *opBuild) windowDuration(at, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if m := manyPeriods.FindStringSubmatch(s); m != nil {
		return 0, b.errAt(at, "%q: a calendar window is one period long (1d, 1w, 1mo, 1q, 1y); for a fixed length write hours (48h is 2 days of UTC)", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, b.errAt(at, "%q is not a window length (expected a duration such as 1h, 15m, 500ms, or a calendar period: 1d, 1w, 1mo, 1q, 1y)", s)
	}
	return d, nil
}

// groupKey is a keyed operator's grouping key: key, or the region's when
// key is empty, which must include the region's key fields.
func (b *opBuild) groupKey(key []string) ([]string, error) {
	if len(key) == 0 {
		key = b.region.Key
	}
	if err := window.CheckPartitioning(key, b.region.Key); err != nil {
		return nil, b.errAt(".key", "%v", err)
	}
	return key, nil
}
