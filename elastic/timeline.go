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
// with one row per period the policy was stepped with, and one per change
// of the channel count made outside the policy (the control plane). The
// first ten columns are for people and plots; the rest hold the period
// exactly as the policy saw it, so that a recorded run can be replayed
// into any policy ([ReadTimeline]; elastic/replay_test.go).

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
//   - length_ns, arrived, departed, prev_backlog: Period.LengthNs,
//     Arrived, Departed and PrevBacklog.
//   - blocked_ns, busy_ns, cpu_ns, records: each channel's ChannelStats,
//     one value per channel joined with ";".
//
// A row for a change made outside the policy has rule "ctl:KIND", level
// -1, channels before and target after the change, the figures of the
// last period the policy saw, and the last eight columns empty.
const TimelineHeader = "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied,target,backlog," +
	"length_ns,arrived,departed,prev_backlog,blocked_ns,busy_ns,cpu_ns,records"

// timelineColumns is the number of columns of TimelineHeader.
const timelineColumns = 18

// WriteTimelineRow writes the row of one period: p as the policy was given
// it, d its decision, applied whether the decision was carried out, at tSec
// seconds since the controller started.
func WriteTimelineRow(w io.Writer, tSec float64, p Period, d Decision, applied bool) error {
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
	_, err := fmt.Fprintf(w, "%.3f,%d,%.4f,%.0f,%.0f,%d,%s,%v,%d,%d,%d,%d,%d,%d,%s,%s,%s,%s\n", tSec, len(p.Channels),
		p.Congestion(), p.Throughput(), p.ArrivalRate(), d.Level, d.Rule, applied, d.Channels, p.Backlog,
		p.LengthNs, p.Arrived, p.Departed, p.PrevBacklog, blocked.String(), busy.String(), cpu.String(), recs.String())
	return err
}

// WriteTimelineChange writes the row of a change from channels from to to
// made outside the policy (kind: "scale"), at tSec seconds; last is the
// last period the policy saw (its figures are repeated for plots).
func WriteTimelineChange(w io.Writer, tSec float64, kind string, from, to int, last Period) error {
	_, err := fmt.Fprintf(w, "%.3f,%d,%.4f,%.0f,%.0f,%d,%s,%v,%d,%d,,,,,,,,\n", tSec, from,
		last.Congestion(), last.Throughput(), last.ArrivalRate(), -1, "ctl:"+kind, true, to, last.Backlog)
	return err
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

// ReadTimeline reads a timeline written with [TimelineHeader]. Files with
// only the first ten columns (written before the raw columns existed) are
// read too, with HasPeriod false in every row. Errors wrap [ErrTimeline]
// and name the line and column.
func ReadTimeline(r io.Reader) ([]TimelineRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrTimeline, err)
	}
	full := strings.Join(head, ",") == TimelineHeader
	if !full && strings.Join(head, ",") != strings.Join(strings.Split(TimelineHeader, ",")[:10], ",") {
		return nil, fmt.Errorf("%w: line 1: header %q: want %q", ErrTimeline, strings.Join(head, ","), TimelineHeader)
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
		row, err := parseTimelineRow(rec, head, full)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrTimeline, line, err)
		}
		row.Line = line
		rows = append(rows, row)
	}
}

func parseTimelineRow(rec, head []string, full bool) (TimelineRow, error) {
	if len(rec) != len(head) {
		return TimelineRow{}, fmt.Errorf("%d columns: want %d", len(rec), len(head))
	}
	var errs []error
	col := func(i int) string { return rec[i] }
	num := func(i int) int64 {
		v, err := strconv.ParseInt(col(i), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", head[i], err))
		}
		return v
	}
	var row TimelineRow
	t, err := strconv.ParseFloat(col(0), 64)
	errs = append(errs, err)
	applied, err := strconv.ParseBool(col(7))
	errs = append(errs, err)
	row.T, row.Applied = t, applied
	row.Channels, row.Level, row.Rule, row.Target = int(num(1)), int(num(5)), Rule(col(6)), int(num(8))
	backlog := uint64(num(9))
	if full && !strings.HasPrefix(col(6), "ctl:") {
		p := Period{LengthNs: num(10), Arrived: uint64(num(11)), Departed: uint64(num(12)), Backlog: backlog, PrevBacklog: uint64(num(13))}
		lists := make([][]int64, 4)
		for k := range lists {
			for _, f := range strings.Split(col(14+k), ";") {
				v, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("column %s: %w", head[14+k], err))
				}
				lists[k] = append(lists[k], v)
			}
			if len(lists[k]) != row.Channels {
				errs = append(errs, fmt.Errorf("column %s: %d values for %d channels", head[14+k], len(lists[k]), row.Channels))
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
	}
	return row, errors.Join(errs...)
}
