package elastic

import (
	"fmt"
	"math"
	"slices"
)

// Statistic reduces the window of the last Config.WindowPeriods periods to
// one value per metric (congestion index, throughput, offered load, true
// rate, utilisation) for the policies' decisions.
type Statistic string

// The statistics. The median is the default: one outlying period in three
// (a descheduled thread, a garbage collection, a burst) moves neither a
// congestion verdict nor a throughput.
const (
	StatMedian Statistic = "median"
	StatMean   Statistic = "mean"
	StatMin    Statistic = "min"
	StatMax    Statistic = "max"
)

// valid reports whether s is one of the statistics.
func (s Statistic) valid() bool {
	switch s {
	case StatMedian, StatMean, StatMin, StatMax:
		return true
	}
	return false
}

// of reduces xs (not empty) with s; scratch is reused for sorting. An
// unknown statistic is the median.
func (s Statistic) of(xs []float64, scratch *[]float64) float64 {
	switch s {
	case StatMean:
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	case StatMin:
		return slices.Min(xs)
	case StatMax:
		return slices.Max(xs)
	}
	b := append((*scratch)[:0], xs...)
	slices.Sort(b)
	*scratch = b
	if k := len(b); k%2 == 1 {
		return b[k/2]
	} else {
		return (b[k/2-1] + b[k/2]) / 2
	}
}

// series keeps the last cap values pushed (a ring).
type series struct {
	xs   []float64
	next int
	cap  int
}

func newSeries(capacity int) series { return series{cap: max(capacity, 1)} }

func (s *series) push(x float64) {
	if len(s.xs) < s.cap {
		s.xs = append(s.xs, x)
		return
	}
	s.xs[s.next] = x
	s.next = (s.next + 1) % s.cap
}

func (s *series) reset()   { s.xs, s.next = s.xs[:0], 0 }
func (s *series) len() int { return len(s.xs) }

// last is the most recent value (0 when empty).
func (s *series) last() float64 {
	if len(s.xs) == 0 {
		return 0
	}
	if len(s.xs) < s.cap {
		return s.xs[len(s.xs)-1]
	}
	return s.xs[(s.next+s.cap-1)%s.cap]
}

// min is the smallest value (+Inf when empty).
func (s *series) min() float64 {
	m := math.Inf(1)
	for _, x := range s.xs {
		m = min(m, x)
	}
	return m
}

// max is the largest value (-Inf when empty).
func (s *series) max() float64 {
	m := math.Inf(-1)
	for _, x := range s.xs {
		m = max(m, x)
	}
	return m
}

func fmtStat(s Statistic, w int) string { return fmt.Sprintf("%s of %d", s, w) }

// majority reports whether more than half of a window of w congestion
// indices is in xs and above thr: the window's median is then above thr
// whatever the periods still to come, so a decision need not wait for them.
func majority(xs []float64, thr float64, w int) bool {
	k := 0
	for _, x := range xs {
		if x > thr {
			k++
		}
	}
	return 2*k > w
}
