package elastic

import (
	"reflect"
	"testing"
)

func TestWindow(t *testing.T) {
	var w Window
	snap := func(ts int64, arrived, departed uint64, ch ...ChannelCounters) Counters {
		return Counters{TimeNs: ts, Arrived: arrived, Departed: departed, Channels: ch, Backlog: 7}
	}
	if _, ok := w.Observe(snap(1e9, 100, 90, ChannelCounters{10, 20, 30, 5}, ChannelCounters{1, 2, 3, 0})); ok {
		t.Fatal("first snapshot gave a period")
	}
	ch := []ChannelCounters{{110, 220, 330, 155}, {1, 2, 3, 0}}
	p, ok := w.Observe(snap(2e9, 1100, 990, ch...))
	if !ok {
		t.Fatal("second snapshot gave no period")
	}
	ch[0].Records = 1e6 // the window must have copied the snapshot
	want := Period{LengthNs: 1e9, Arrived: 1000, Departed: 900, Backlog: 7, PrevBacklog: 7, Channels: []ChannelStats{
		{BlockedNs: 100, BusyNs: 200, Records: 300, CPUNs: 150}, {},
	}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("period = %+v, want %+v", p, want)
	}

	// A channel restarted from zero: its current value is the delta.
	p, ok = w.Observe(snap(3e9, 1200, 1000, ChannelCounters{5, 6, 7, 8}, ChannelCounters{2, 3, 4, 0}))
	if !ok || p.Channels[0] != (ChannelStats{5, 6, 7, 8}) || p.Channels[1] != (ChannelStats{1, 1, 1, 0}) {
		t.Fatalf("after a counter reset: %+v, %v", p, ok)
	}

	// A reconfiguration (3 channels now) gives no period and a new baseline.
	if _, ok := w.Observe(snap(4e9, 1300, 1100, ChannelCounters{}, ChannelCounters{}, ChannelCounters{})); ok {
		t.Fatal("changed channel count gave a period")
	}
	if p, ok := w.Observe(snap(5e9, 1400, 1200, ChannelCounters{}, ChannelCounters{}, ChannelCounters{Records: 9})); !ok || p.Arrived != 100 || p.Channels[2].Records != 9 {
		t.Fatalf("after the reconfiguration: %+v, %v", p, ok)
	}

	// Time that does not advance gives no period.
	if _, ok := w.Observe(snap(5e9, 1500, 1300, make([]ChannelCounters, 3)...)); ok {
		t.Fatal("zero-length period")
	}
	w.Reset()
	if _, ok := w.Observe(snap(6e9, 1600, 1400, make([]ChannelCounters, 3)...)); ok {
		t.Fatal("Reset did not drop the baseline")
	}
}
