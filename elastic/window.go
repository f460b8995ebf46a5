package elastic

// ChannelCounters are one channel's cumulative counters, as the runtime reads
// them through atomics: they only grow while the channel lives.
type ChannelCounters struct {
	BlockedNs int64  // splitter blocked on this channel's ring, ns, cumulative
	BusyNs    int64  // time inside operators, ns, cumulative
	Records   uint64 // records processed, cumulative
	CPUNs     int64  // thread CPU time working, ns, cumulative (0: not measured)
}

// Counters is one snapshot of a region's cumulative counters.
type Counters struct {
	// TimeNs is when the snapshot was taken, in ns on a monotonic clock of
	// the caller's choice; only differences are used.
	TimeNs   int64
	Channels []ChannelCounters
	Arrived  uint64 // records that arrived at the splitter, cumulative
	Departed uint64 // records that left the region, cumulative
	// Backlog is a gauge, not a counter: records waiting in front of the
	// channels' operators now (the source's lag and the records in the
	// splitter's rings). It is copied into the Period as is.
	Backlog uint64
}

// Window turns successive [Counters] snapshots into per-period deltas. It is
// pure: the caller passes the snapshots and their timestamps. The zero value
// is ready to use. A Window is not safe for concurrent use.
type Window struct {
	prev Counters
	have bool
}

// Observe takes the next snapshot and returns the Period since the previous
// one. It returns ok == false, and keeps c as the new baseline, when there is
// no usable previous snapshot: on the first call, after [Window.Reset], when
// the channel count changed (a reconfiguration: per-channel deltas would
// compare different channels), or when time did not advance.
//
// A counter that went backwards (a channel restarted from zero) contributes
// its current value as the delta. Observe copies what it keeps; the caller
// may reuse c.Channels afterwards.
func (w *Window) Observe(c Counters) (p Period, ok bool) {
	ok = w.ObserveTo(c, &p)
	return p, ok
}

// ObserveTo is Observe writing the Period into p, reusing the capacity of
// p.Channels (the runtime's control loop allocates nothing per period). On
// ok == false p is left as it was.
func (w *Window) ObserveTo(c Counters, p *Period) (ok bool) {
	prev := &w.prev
	if w.have && len(prev.Channels) == len(c.Channels) && c.TimeNs > prev.TimeNs {
		chans := p.Channels[:0]
		*p = Period{
			LengthNs:    c.TimeNs - prev.TimeNs,
			Arrived:     deltaU(prev.Arrived, c.Arrived),
			Departed:    deltaU(prev.Departed, c.Departed),
			Backlog:     c.Backlog,
			PrevBacklog: prev.Backlog,
		}
		for i, cur := range c.Channels {
			old := prev.Channels[i]
			chans = append(chans, ChannelStats{
				BlockedNs: deltaI(old.BlockedNs, cur.BlockedNs),
				BusyNs:    deltaI(old.BusyNs, cur.BusyNs),
				Records:   deltaU(old.Records, cur.Records),
				CPUNs:     deltaI(old.CPUNs, cur.CPUNs),
			})
		}
		p.Channels = chans
		ok = true
	}
	w.prev = Counters{
		TimeNs:   c.TimeNs,
		Channels: append(prev.Channels[:0], c.Channels...),
		Arrived:  c.Arrived,
		Departed: c.Departed,
		Backlog:  c.Backlog,
	}
	w.have = true
	return ok
}

// Reset forgets the baseline; the next Observe returns ok == false. Call it
// when a reconfiguration completes so that no period spans two channel sets.
func (w *Window) Reset() { w.have = false }

func deltaU(old, cur uint64) uint64 {
	if cur < old {
		return cur
	}
	return cur - old
}

func deltaI(old, cur int64) int64 {
	if cur < old {
		return cur
	}
	return cur - old
}
