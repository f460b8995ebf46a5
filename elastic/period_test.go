package elastic

import (
	"errors"
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestPeriodRates(t *testing.T) {
	p := Period{
		LengthNs: 2e9,
		Arrived:  3000,
		Departed: 2000,
		Channels: []ChannelStats{
			{BlockedNs: 0.2e9, BusyNs: 1e9, Records: 600},
			{BlockedNs: 0.3e9, BusyNs: 2e9, Records: 1400},
		},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"Congestion (summed)", p.Congestion(), 0.25},
		{"ChannelCongestion(1)", p.ChannelCongestion(1), 0.15},
		{"Throughput", p.Throughput(), 1000},
		{"ArrivalRate", p.ArrivalRate(), 1500},
		{"OfferedRate", p.OfferedRate(), 1500 / 0.75},
		{"Utilization", p.Utilization(), 0.75},
		{"TrueRate", p.TrueRate(), 2000 / 3.0},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestPeriodClamps(t *testing.T) {
	p := Period{LengthNs: 1e9, Arrived: 10, Channels: []ChannelStats{{BlockedNs: 0.8e9}, {BlockedNs: 0.7e9, BusyNs: 3e9}}}
	if got := p.Congestion(); got != 1 {
		t.Errorf("overlapping blocked time: Congestion = %v, want 1", got)
	}
	if got := p.OfferedRate(); !near(got, 10/minUnblocked) {
		t.Errorf("OfferedRate when always blocked = %v, want capped at %v", got, 10/minUnblocked)
	}
	if got := p.Utilization(); got != 0.5 {
		t.Errorf("Utilization = %v, want 0.5 (busy clamped to the period)", got)
	}
	idle := Period{LengthNs: 1e9, Channels: make([]ChannelStats, 3)}
	if idle.TrueRate() != 0 || idle.Congestion() != 0 || idle.Throughput() != 0 {
		t.Errorf("idle period: true rate %v, congestion %v, throughput %v, want 0", idle.TrueRate(), idle.Congestion(), idle.Throughput())
	}
	var zero Period
	if zero.Congestion() != 0 || zero.Throughput() != 0 || zero.ArrivalRate() != 0 || zero.Utilization() != 0 {
		t.Error("zero Period must give zero rates, not NaN or a panic")
	}
}

func TestPeriodValidate(t *testing.T) {
	for _, p := range []Period{
		{},
		{LengthNs: -1, Channels: make([]ChannelStats, 1)},
		{LengthNs: 1e9},
		{LengthNs: 1e9, Channels: []ChannelStats{{BlockedNs: -1}}},
		{LengthNs: 1e9, Channels: []ChannelStats{{BusyNs: -1}}},
	} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidPeriod) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidPeriod", p, err)
		}
	}
}

// TestOfferedLoadBacklog: with a backlog measured, the offered load is
// what the channels processed plus the backlog's growth (records that
// arrived at the splitter and still wait in its rings are in the backlog,
// so they are not counted twice); CPU time, when every channel reports it,
// is the work time of the true rate.
func TestOfferedLoadBacklog(t *testing.T) {
	// 1,300 records arrived at the splitter, 300 of them still in its rings.
	p := Period{LengthNs: 2e9, Arrived: 1300, Departed: 1000, Backlog: 600, PrevBacklog: 200,
		Channels: []ChannelStats{{BlockedNs: 1e9, BusyNs: 2e9, CPUNs: 1e9, Records: 500}, {BusyNs: 2e9, CPUNs: 1e9, Records: 500}}}
	if got := p.OfferedLoad(); got != 700 { // (1000 + 600 − 200) / 2 s
		t.Errorf("OfferedLoad = %v, want 700", got)
	}
	if got := p.TrueRate(); got != 500 { // 1000 records / 2 s of CPU, not 4 s busy
		t.Errorf("TrueRate = %v, want 500", got)
	}
	p.Channels[1].CPUNs = 0 // not measured on one channel: busy time counts
	if got := p.TrueRate(); got != 250 {
		t.Errorf("TrueRate without CPU on every channel = %v, want 250", got)
	}
	p.Backlog, p.PrevBacklog, p.Arrived = 0, 0, 1000 // no backlog: arrival over the unblocked time
	if got := p.OfferedLoad(); got != 1000 {         // 500/s over 1 − 0.5
		t.Errorf("OfferedLoad without backlog = %v, want 1000", got)
	}
}

// Descheduled is the share of the busy time off a CPU, pooled over the
// channels; 0 when a channel does not report thread CPU.
func TestDescheduled(t *testing.T) {
	p := Period{LengthNs: 1e9, Channels: []ChannelStats{{BusyNs: 8e8, CPUNs: 4e8}, {BusyNs: 2e8, CPUNs: 2e8}}}
	if got := p.Descheduled(); math.Abs(got-0.4) > 1e-12 { // 1 − 0.6 s / 1 s
		t.Errorf("Descheduled = %v, want 0.4", got)
	}
	p.Channels[1].CPUNs = 0
	if got := p.Descheduled(); got != 0 {
		t.Errorf("Descheduled without CPU on every channel = %v, want 0", got)
	}
	idle := Period{LengthNs: 1e9, Channels: []ChannelStats{{}}}
	if got := idle.Descheduled(); got != 0 {
		t.Errorf("Descheduled of an idle channel = %v, want 0", got)
	}
}
