package elastic

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The timeline (`streamd run --elastic-log`, docs/JOB.md) is a CSV file
// written by core/runtime: one row per period the region's controller
// was stepped with, one per change of the channel count made outside it
// (the control plane), one per rebalance plan and step. The first
// sixteen columns are for people and plots; the last eight hold a
// controller period exactly as the policy saw it, so that a recorded run
// can be replayed into any policy ([ReadTimeline];
// elastic/replay_test.go).

// TimelineHeader is the timeline's first line (without the newline):
//
//   - t_s: seconds since the controller's first snapshot, at the period's
//     end.
//   - channels: the channel count during the period (len(Period.Channels)).
//   - congestion, throughput, arrival_rate: [Period.Congestion],
//     [Period.Throughput] and [Period.ArrivalRate] (records/s), rounded.
//   - level, rule, applied, target: the decision (level -1 without levels),
//     whether it was carried out, and its channel count.
//   - backlog: Period.Backlog, records at the period's end.
//   - skew, planned_skew, groups, bytes, steps, reason: the period's skew
//     (max/mean channel load), a rebalance plan's or step's figures, and
//     the decision's text (core/runtime writes them).
//   - length_ns, arrived, departed, prev_backlog: Period.LengthNs,
//     Arrived, Departed and PrevBacklog ([TimelineRaw]).
//   - blocked_ns, busy_ns, cpu_ns, records: each channel's ChannelStats,
//     one value per channel joined with ";".
//
// A row that is not a controller period (rule "ctl:KIND", "rebalance",
// "rebalance-step") has the last eight columns empty.
const TimelineHeader = "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied,target,backlog," +
	"skew,planned_skew,groups,bytes,steps,reason," +
	"length_ns,arrived,departed,prev_backlog,blocked_ns,busy_ns,cpu_ns,records"

// rawColumns are the columns of a period as the policy saw it, the last
// eight of TimelineHeader.
var rawColumns = []string{"length_ns", "arrived", "departed", "prev_backlog", "blocked_ns", "busy_ns", "cpu_ns", "records"}

// TimelineRaw returns p's raw columns (the last eight of TimelineHeader).
func TimelineRaw(p Period) []string {
	var blocked, busy, cpu, recs strings.Builder
	for i, c := range p.Channels {
		if i > 0 {
			blocked.WriteByte(';')
			busy.WriteByte(';')
			cpu.WriteByte(';')
			recs.WriteByte(';')
		}
		blocked.WriteString(strconv.FormatInt(c.BlockedNs, 10))
		busy.WriteString(strconv.FormatInt(c.BusyNs, 10))
		cpu.WriteString(strconv.FormatInt(c.CPUNs, 10))
		recs.WriteString(strconv.FormatUint(c.Records, 10))
	}
	return []string{strconv.FormatInt(p.LengthNs, 10), strconv.FormatUint(p.Arrived, 10), strconv.FormatUint(p.Departed, 10),
		strconv.FormatUint(p.PrevBacklog, 10), blocked.String(), busy.String(), cpu.String(), recs.String()}
}

// TimelineRow is one row of a timeline read back by [ReadTimeline].
type TimelineRow struct {
	Line     int     // line number in the file, from 1 (the header)
	T        float64 // t_s
	Channels int     // channels during the period (before, for a change)
	Level    int
	Rule     Rule
	Applied  bool
	Target   int
	// Period is the period as the policy saw it; HasPeriod is false for a
	// change made outside the policy (rule "ctl:…") and for rows written
	// before the timeline held the raw columns.
	Period    Period
	HasPeriod bool
}

// ErrTimeline is wrapped by [ReadTimeline]'s errors for a malformed file.
var ErrTimeline = errors.New("elastic: bad timeline")

// ReadTimeline reads a timeline. Columns are found by name: the first ten
// of TimelineHeader are required; a row holds its period (HasPeriod) when
// the file has the raw columns and the row's are not empty, so files
// written before the rebalance columns or before the raw columns existed
// are read too. Errors wrap [ErrTimeline] and name the line and column.
func ReadTimeline(r io.Reader) ([]TimelineRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrTimeline, err)
	}
	idx := map[string]int{}
	for i, h := range head {
		idx[h] = i
	}
	for _, h := range strings.Split(TimelineHeader, ",")[:10] {
		if _, ok := idx[h]; !ok {
			return nil, fmt.Errorf("%w: line 1: header %q has no column %q", ErrTimeline, strings.Join(head, ","), h)
		}
	}
	raw := make([]int, len(rawColumns))
	full := true
	for k, h := range rawColumns {
		i, ok := idx[h]
		raw[k], full = i, full && ok
	}
	if !full {
		raw = nil
	}
	var rows []TimelineRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTimeline, err)
		}
		row, err := parseTimelineRow(rec, head, idx, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrTimeline, line, err)
		}
		row.Line = line
		rows = append(rows, row)
	}
}

func parseTimelineRow(rec, head []string, idx map[string]int, raw []int) (TimelineRow, error) {
	if len(rec) != len(head) {
		return TimelineRow{}, fmt.Errorf("%d columns: want %d", len(rec), len(head))
	}
	var errs []error
	num := func(i int) int64 {
		v, err := strconv.ParseInt(rec[i], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", head[i], err))
		}
		return v
	}
	col := func(name string) int { return idx[name] }
	var row TimelineRow
	t, err := strconv.ParseFloat(rec[col("t_s")], 64)
	errs = append(errs, err)
	applied, err := strconv.ParseBool(rec[col("applied")])
	errs = append(errs, err)
	row.T, row.Applied = t, applied
	row.Channels, row.Level, row.Rule, row.Target = int(num(col("channels"))), int(num(col("level"))), Rule(rec[col("rule")]), int(num(col("target")))
	if raw == nil || rec[raw[0]] == "" { // not a controller period
		return row, errors.Join(errs...)
	}
	backlog := uint64(num(col("backlog")))
	p := Period{LengthNs: num(raw[0]), Arrived: uint64(num(raw[1])), Departed: uint64(num(raw[2])), Backlog: backlog, PrevBacklog: uint64(num(raw[3]))}
	lists := make([][]int64, 4)
	for k := range lists {
		i := raw[4+k]
		for _, f := range strings.Split(rec[i], ";") {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("column %s: %w", head[i], err))
			}
			lists[k] = append(lists[k], v)
		}
		if len(lists[k]) != row.Channels {
			errs = append(errs, fmt.Errorf("column %s: %d values for %d channels", head[i], len(lists[k]), row.Channels))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return row, err
	}
	p.Channels = make([]ChannelStats, row.Channels)
	for i := range p.Channels {
		p.Channels[i] = ChannelStats{BlockedNs: lists[0][i], BusyNs: lists[1][i], CPUNs: lists[2][i], Records: uint64(lists[3][i])}
	}
	row.Period, row.HasPeriod = p, true
	return row, nil
}
