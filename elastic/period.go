package elastic

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidPeriod is returned (wrapped) by [Period.Validate] for metrics a
// policy cannot use: a non-positive length, no channels, negative times.
var ErrInvalidPeriod = errors.New("elastic: invalid period")

// ChannelStats is what one channel of a parallel region reported for one
// adaptation period.
type ChannelStats struct {
	// BlockedNs is the time, in ns, that the splitter's non-blocking pushes
	// to this channel's full ring spent blocked during the period: from the
	// first failed try-push of a batch until the push succeeded. It is the
	// raw material of the congestion index [TPDS14 §4.1].
	BlockedNs int64
	// BusyNs is the time, in ns, the channel spent inside its operators
	// ("useful time" [DS2 §3.1]). Waiting for input and waiting for room in
	// the output ring are excluded.
	BusyNs int64
	// Records is the number of records the channel processed.
	Records uint64
	// CPUNs is the thread CPU time, in ns, the channel spent working
	// (CLOCK_THREAD_CPUTIME_ID of its locked OS thread, waiting on rings
	// left out), or 0 when not measured. Unlike BusyNs it does not count
	// the time the thread was descheduled inside an operator, so under CPU
	// starvation records/CPUNs is still the channel's true rate.
	CPUNs int64
}

// Period is what the runtime measured for one parallel region over one
// adaptation period. Counts are deltas over the period, not cumulative
// counters; [Window] turns cumulative counters into a Period.
type Period struct {
	// LengthNs is the length of the period, in ns (nominally
	// Config.PeriodNs; the measured length is what counts).
	LengthNs int64
	// Channels holds one entry per channel the region ran with during the
	// period, indexed by channel number. Its length is the channel count.
	Channels []ChannelStats
	// Arrived is the number of records that arrived at the splitter.
	Arrived uint64
	// Departed is the number of records that left the region (out of the
	// merger). The region's throughput [TPDS14 §4.1] is Departed per second.
	Departed uint64
	// Backlog is the number of records waiting in front of the channels'
	// operators at the end of the period: offered to the region and not yet
	// processed (a rate-limited source's lag, a consumer's lag, records in
	// the splitter's rings), or 0 when there is none or it is unknown.
	// PrevBacklog is the same at the start of the period (the previous
	// snapshot's Backlog; [Window] sets it). [DS2] drains it and uses the
	// change to estimate the offered load ([Period.OfferedLoad]).
	Backlog     uint64
	PrevBacklog uint64
}

// Validate reports whether a policy can use p. The error wraps
// [ErrInvalidPeriod].
func (p Period) Validate() error {
	if p.LengthNs <= 0 {
		return fmt.Errorf("%w: length %d ns: want > 0", ErrInvalidPeriod, p.LengthNs)
	}
	if len(p.Channels) == 0 {
		return fmt.Errorf("%w: no channels", ErrInvalidPeriod)
	}
	for i, c := range p.Channels {
		if c.BlockedNs < 0 || c.BusyNs < 0 || c.CPUNs < 0 {
			return fmt.Errorf("%w: channel %d: blocked %d ns, busy %d ns, cpu %d ns: want >= 0",
				ErrInvalidPeriod, i, c.BlockedNs, c.BusyNs, c.CPUNs)
		}
	}
	return nil
}

// seconds is the period's length in seconds.
func (p Period) seconds() float64 { return float64(p.LengthNs) / 1e9 }

// BlockedNs is the splitter's total blocked time over all channels, in ns.
func (p Period) BlockedNs() int64 {
	var s int64
	for _, c := range p.Channels {
		s += c.BlockedNs
	}
	return s
}

// Congestion is the congestion index of the region [TPDS14 §4.1]: the
// fraction of the period the splitter spent blocked on full channel rings,
// in [0, 1]. It is 0 for a period of non-positive length.
//
// The per-channel blocked fractions are summed, not averaged: the splitter
// is one goroutine, so its blocked intervals on different channels are
// disjoint and add up to its own blocked fraction. An average would divide
// the signal by the channel count (at 16 channels it could never exceed
// 1/16), which would make the congestion threshold mean something different
// at every level. Should a runtime ever measure overlapping per-channel
// intervals, the sum is clamped to 1.
func (p Period) Congestion() float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	return clamp01(float64(p.BlockedNs()) / float64(p.LengthNs))
}

// ChannelCongestion is channel i's share of the congestion index: the
// fraction of the period the splitter spent blocked on channel i's ring, in
// [0, 1]. A channel with a much larger share than the others points to key
// skew rather than to too few channels.
func (p Period) ChannelCongestion(i int) float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	return clamp01(float64(p.Channels[i].BlockedNs) / float64(p.LengthNs))
}

// Throughput is the rate at which records left the region, in records/s
// [TPDS14 §4.1]. It is 0 for a period of non-positive length.
func (p Period) Throughput() float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	return float64(p.Departed) / p.seconds()
}

// ArrivalRate is the rate at which records arrived at the splitter, in
// records/s. While the splitter blocks, upstream is held back, so this is
// less than the offered load; see [Period.OfferedRate].
func (p Period) ArrivalRate() float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	return float64(p.Arrived) / p.seconds()
}

// minUnblocked bounds [Period.OfferedRate] when the splitter was blocked for
// (almost) the whole period: at most 100 times the arrival rate.
const minUnblocked = 0.01

// OfferedRate estimates the rate, in records/s, at which upstream would have
// delivered records had the splitter never blocked: the arrival rate divided
// by the fraction of the period the splitter was not blocked. This is the
// "true output rate" of the region's upstream in the sense of [DS2 §3.1]
// (records over the time not spent waiting on the output). When the
// splitter was blocked for more than 99 % of the period the estimate is
// capped at 100 times the arrival rate.
func (p Period) OfferedRate() float64 {
	free := 1 - p.Congestion()
	if free < minUnblocked {
		free = minUnblocked
	}
	return p.ArrivalRate() / free
}

// OfferedLoad is the rate, in records/s, at which records were offered to
// the region: with a backlog measured at either end of the period, the
// records the channels processed (Departed) plus the growth of the backlog
// (conservation: what was offered was either processed or still waits,
// at the source or in the rings, so records in the rings are counted once);
// otherwise [Period.OfferedRate]. It is 0 for a period of non-positive
// length.
func (p Period) OfferedLoad() float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	if p.Backlog == 0 && p.PrevBacklog == 0 {
		return p.OfferedRate()
	}
	return max(0, float64(p.Departed)+float64(p.Backlog)-float64(p.PrevBacklog)) / p.seconds()
}

// drainRate is the rate, in records/s, at which the backlog fell during
// the period (negative when it grew).
func (p Period) drainRate() float64 {
	if p.LengthNs <= 0 {
		return 0
	}
	return (float64(p.PrevBacklog) - float64(p.Backlog)) / p.seconds()
}

// Utilization is the mean fraction of the period the channels spent busy
// inside operators, in [0, 1].
func (p Period) Utilization() float64 {
	if p.LengthNs <= 0 || len(p.Channels) == 0 {
		return 0
	}
	var s float64
	for _, c := range p.Channels {
		s += clamp01(float64(c.BusyNs) / float64(p.LengthNs))
	}
	return s / float64(len(p.Channels))
}

// TrueRate is the true processing rate of one channel [DS2 §3.1], in
// records/s: the records the channels processed divided by the time they
// spent working, pooled over all channels (so that a nearly idle channel
// does not dominate). The time working is CPUNs when every channel reports
// it (preemption is not work), BusyNs otherwise. It is 0 when the channels
// were never busy.
func (p Period) TrueRate() float64 {
	var recs uint64
	var busy, cpu int64
	allCPU := true
	for _, c := range p.Channels {
		recs += c.Records
		busy += c.BusyNs
		cpu += c.CPUNs
		allCPU = allCPU && c.CPUNs > 0
	}
	if allCPU && len(p.Channels) > 0 {
		busy = cpu
	}
	if busy <= 0 {
		return 0
	}
	return float64(recs) / (float64(busy) / 1e9)
}

// Descheduled is the fraction of the channels' busy time (inside
// operators) they spent off a CPU, in [0, 1]: 1 − CPUNs / BusyNs pooled
// over the channels. A loaded machine (other processes, more runnable
// threads than cores) shows here: the channels were preempted while
// working, so their throughput understates what the channel count does on
// a quiet machine, and time not busy is not time spent waiting on the
// output. It is 0 when a channel reports no thread CPU (not measured) or
// the channels were never busy.
func (p Period) Descheduled() float64 {
	var busy, cpu int64
	for _, c := range p.Channels {
		if c.CPUNs <= 0 {
			return 0
		}
		busy += c.BusyNs
		cpu += c.CPUNs
	}
	if busy <= 0 {
		return 0
	}
	return clamp01(1 - float64(cpu)/float64(busy))
}

func clamp01(x float64) float64 {
	switch {
	case math.IsNaN(x), x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
