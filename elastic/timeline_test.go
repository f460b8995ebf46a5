package elastic

import (
	"bytes"
	"encoding/csv"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A period row written with TimelineRaw's columns (as core/runtime writes
// it) reads back as the same Period; a control-plane row and a rebalance
// row have none; files of the ten older columns read too.
func TestTimelineRoundTrip(t *testing.T) {
	p := Period{LengthNs: 1_000_300_000, Arrived: 480_123, Departed: 479_001, Backlog: 2_140, PrevBacklog: 1_018,
		Channels: []ChannelStats{{BlockedNs: 12_345, BusyNs: 800_000_001, CPUNs: 790_000_000, Records: 240_000},
			{BlockedNs: 0, BusyNs: 700_000_000, CPUNs: 0, Records: 239_001}}}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(strings.Split(TimelineHeader, ","))
	empty := make([]string, len(rawColumns))
	w.Write(append([]string{"12.500", "2", "0.1000", "479000", "480000", "-1", "ds2", "true", "3", "2140", "1.0100", "", "", "", "", "ds2: a, b"}, TimelineRaw(p)...))
	w.Write(append([]string{"13.000", "3", "0.1000", "479000", "480000", "-1", "ctl:scale", "true", "1", "2140", "", "", "", "", "", "api"}, empty...))
	w.Write(append([]string{"13.500", "1", "", "", "", "-1", "rebalance", "true", "1", "", "1.3700", "1.0300", "1", "272", "1", "rebalancer"}, empty...))
	w.Flush()
	rows, err := ReadTimeline(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	r := rows[0]
	if !r.HasPeriod || !reflect.DeepEqual(r.Period, p) || r.Rule != RuleDS2 || !r.Applied || r.Target != 3 || r.Channels != 2 || r.Level != -1 || r.T != 12.5 {
		t.Errorf("row 1 = %+v, want the period and decision written", r)
	}
	if c := rows[1]; c.HasPeriod || c.Rule != "ctl:scale" || c.Channels != 3 || c.Target != 1 || !c.Applied {
		t.Errorf("row 2 = %+v, want a control-plane change 3 -> 1 without a period", c)
	}
	if c := rows[2]; c.HasPeriod || c.Rule != "rebalance" || c.Line != 4 {
		t.Errorf("row 3 = %+v, want a rebalance row without a period", c)
	}

	old := "t_s,channels,congestion,throughput,arrival_rate,level,rule,applied,target,backlog\n1.000,1,0.8443,382971,399302,0,hold,false,1,98521\n"
	rows, err = ReadTimeline(strings.NewReader(old))
	if err != nil || len(rows) != 1 || rows[0].HasPeriod || rows[0].Channels != 1 {
		t.Errorf("older timeline: %+v, %v", rows, err)
	}

	bad := TimelineHeader + "\n1.0,2,0,0,0,-1,hold,false,2,0,,,,,,,1000,0,0,0,1;2,3,4;5,6;7\n"
	if _, err := ReadTimeline(strings.NewReader(bad)); !errors.Is(err, ErrTimeline) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "busy_ns") {
		t.Errorf("one busy value for 2 channels: err %v, want ErrTimeline naming line 2 and busy_ns", err)
	}
	if _, err := ReadTimeline(strings.NewReader("t_s,channels\n1,2\n")); !errors.Is(err, ErrTimeline) || !strings.Contains(err.Error(), "congestion") {
		t.Errorf("a header without congestion: err %v", err)
	}
}
