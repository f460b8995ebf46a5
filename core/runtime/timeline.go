package runtime

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"streamd/elastic"
)

// timeline writes the region's reconfiguration timeline (Region.Timeline,
// `streamd run --elastic-log`; docs/JOB.md, "Live channel changes"): a CSV
// with one row per period of the job's own controller (a Reporter), per change
// of the channel count that controller did not decide (the control plane's
// scale, a RunPolicy's, a schedule's), per rebalance plan and per
// rebalance step. It is written by the goroutine that routes only (the
// source stage, or a source worker under the exchange's lock), so it needs
// no lock. A nil *timeline writes nothing.
type timeline struct {
	w     *csv.Writer
	start time.Time
	// seen: the figures of the last whole period the controller saw, for
	// the rows of changes it did not make.
	seen Metrics
}

// timelineHeader names the columns (elastic.TimelineHeader; docs/JOB.md
// documents them). noRaw fills the last eight, a period as the policy saw
// it, on rows that are not a controller period.
var (
	timelineHeader = strings.Split(elastic.TimelineHeader, ",")
	noRaw          = make([]string, 8)
)

// newTimeline writes the header to w; nil for no w.
func newTimeline(w io.Writer) *timeline {
	if w == nil {
		return nil
	}
	t := &timeline{w: csv.NewWriter(w)}
	t.row(timelineHeader)
	return t
}

// at is the t_s of a row at now: seconds since the first row's time.
func (t *timeline) at(now time.Time) string {
	if t.start.IsZero() {
		t.start = now
	}
	return fmt.Sprintf("%.3f", now.Sub(t.start).Seconds())
}

func (t *timeline) row(f []string) {
	t.w.Write(f)
	t.w.Flush()
}

// begin sets the time rows count from (the controller's first snapshot),
// unless a row came before.
func (t *timeline) begin(now time.Time) {
	if t != nil && t.start.IsZero() {
		t.start = now
	}
}

// period writes the row of one period of the job's own controller: the
// channel count during it, its figures, the decision d and whether a
// change was asked for (applied), the count decided (target), the backlog
// at its end and its skew.
func (t *timeline) period(now time.Time, m *Metrics, d Decision, applied bool) {
	if t == nil {
		return
	}
	t.seen.Region, t.seen.Skew = m.Region, m.Skew
	g := &m.Region
	t.row(append([]string{t.at(now), strconv.Itoa(len(g.Channels)), fmt.Sprintf("%.4f", g.Congestion()), fmt.Sprintf("%.0f", g.Throughput()),
		fmt.Sprintf("%.0f", g.ArrivalRate()), strconv.Itoa(d.Level), d.Rule, strconv.FormatBool(applied), strconv.Itoa(d.Channels),
		strconv.FormatUint(g.Backlog, 10), fmt.Sprintf("%.4f", m.Skew), "", "", "", "", d.Text}, elastic.TimelineRaw(*g)...))
}

// scale writes the row of a change of the channel count from to to that
// the controller did not decide: level -1, rule "ctl:scale", with the
// figures of the last period the controller saw.
func (t *timeline) scale(now time.Time, from, to int, reason string) {
	if t == nil {
		return
	}
	g := &t.seen.Region
	t.row(append([]string{t.at(now), strconv.Itoa(from), fmt.Sprintf("%.4f", g.Congestion()), fmt.Sprintf("%.0f", g.Throughput()),
		fmt.Sprintf("%.0f", g.ArrivalRate()), "-1", "ctl:" + KindScale, "true", strconv.Itoa(to), strconv.FormatUint(g.Backlog, 10),
		"", "", "", "", "", reason}, noRaw...))
}

// plan writes the row of a rebalance plan at channels: rule "rebalance",
// applied when it moves key groups, the skew measured (skew) and planned,
// the key groups and state bytes it moves, its steps, and who asked.
func (t *timeline) plan(now time.Time, channels int, p RebalancePlan, reason string) {
	if t == nil {
		return
	}
	ch := strconv.Itoa(channels)
	t.row(append([]string{t.at(now), ch, "", "", "", "-1", "rebalance", strconv.FormatBool(p.Groups > 0), ch, "",
		fmt.Sprintf("%.4f", p.Before), fmt.Sprintf("%.4f", p.After), strconv.Itoa(p.Groups), strconv.FormatInt(p.Bytes, 10),
		strconv.Itoa(p.Steps), reason}, noRaw...))
}

// step writes the row of one rebalance step at channels: rule
// "rebalance-step", the key groups it moves and their state bytes (-1:
// not known, a random step), and what it belongs to.
func (t *timeline) step(now time.Time, channels, groups int, bytes int64, reason string) {
	if t == nil {
		return
	}
	ch, b := strconv.Itoa(channels), ""
	if bytes >= 0 {
		b = strconv.FormatInt(bytes, 10)
	}
	t.row(append([]string{t.at(now), ch, "", "", "", "-1", "rebalance-step", "true", ch, "", "", "", strconv.Itoa(groups), b, "", reason}, noRaw...))
}
