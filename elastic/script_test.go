package elastic

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"streamd/internal/scripttest"
)

// TestScripts runs testdata/scripts/* (cockroachdb/datadriven: a command
// line, a line "----", the expected output, and a blank line; lines
// starting with # are comments; -rewrite regenerates the expected output
// after a deliberate change).
//
// Commands:
//
//	new <levels|ds2|off> [dryrun=true] [cores=N] [max=N] [min=N] [initial=N]
//	    [threshold=F] [alpha=F] [fast=BOOL] [down=N] [warmup=N] [drain=N]
//	    [window=N] [stat=S] [cooldown=N] [gain=F] [memory=N]
//	period [channels=N] [len=DUR] [congestion=F] [throughput=RATE]
//	    [arrival=RATE] [util=F] [backlog=N] [prevbacklog=N] [cpu=F]
//	periods n=K <period keys>      (K periods, one decision a line)
//	memory                         (levels only: what the controller remembers)
//	levelmap [fast=BOOL] [limit=N]
//	config <new's config keys>     (validation result)
//
// A period's channel count defaults to the policy's last decision
// (Policy.Channels), as if the runtime carried it out; congestion is spread
// evenly over the channels; util (default 1) is each channel's busy fraction.
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		st := &scriptState{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			line := d.Cmd
			for _, a := range d.CmdArgs {
				line += " " + a.String()
			}
			return st.run(line) + "\n"
		})
	})
}

type scriptState struct {
	p Policy
}

func (s *scriptState) run(line string) string {
	fields := strings.Fields(line)
	cmd, args := fields[0], map[string]string{}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	switch cmd {
	case "new":
		name := ""
		if len(pos) > 0 {
			name = pos[0]
		}
		cfg, err := scriptConfig(args)
		if err != nil {
			return "error: " + err.Error()
		}
		p, err := New(name, cfg)
		if err != nil {
			return "error: " + err.Error()
		}
		if args["dryrun"] == "true" {
			p = NewDryRun(p)
		}
		s.p = p
		return describe(p)
	case "config":
		cfg, err := scriptConfig(args)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			return strings.ReplaceAll(err.Error(), "elastic: invalid config: ", "")
		}
		return "ok"
	case "levelmap":
		m := LevelMap{Fast: args["fast"] != "false"}
		limit := 32
		if v, ok := args["limit"]; ok {
			limit, _ = strconv.Atoi(v)
		}
		hi := m.MaxLevel(limit)
		var b strings.Builder
		for l := 0; l <= hi; l++ {
			fmt.Fprintf(&b, "%d:%d ", l, m.Channels(l))
		}
		fmt.Fprintf(&b, "L*=%d", hi)
		return b.String()
	case "period", "periods":
		if s.p == nil {
			return "error: no policy (use new)"
		}
		n := 1
		if cmd == "periods" {
			n, _ = strconv.Atoi(args["n"])
		}
		var lines []string
		for range n {
			p, err := scriptPeriod(args, s.p.Channels())
			if err != nil {
				return "error: " + err.Error()
			}
			lines = append(lines, s.p.Step(p).String())
		}
		return strings.Join(lines, "\n")
	case "memory":
		p := s.p
		if d, ok := p.(*DryRun); ok {
			p = d.Unwrap()
		}
		l, ok := p.(*Levels)
		if !ok {
			return "error: memory needs the levels policy"
		}
		lo, hi := l.Range()
		var lines []string
		for i, m := range l.Memory() {
			if i < lo || i > hi {
				continue
			}
			if !m.Known {
				lines = append(lines, fmt.Sprintf("level %d (%d ch): unknown", i, l.lm.Channels(i)))
				continue
			}
			capacity := "capacity unknown"
			if m.Capacity > 0 {
				capacity = fmt.Sprintf("capacity %s (period %d)", fmtRate(m.Capacity), m.CapacityPeriod)
			}
			lines = append(lines, fmt.Sprintf("level %d (%d ch): %s at %s, period %d, %s",
				i, l.lm.Channels(i), congWord(m.Congested), fmtRate(m.Throughput), m.LastPeriod, capacity))
		}
		return strings.Join(lines, "\n")
	}
	return "error: unknown command " + cmd
}

func describe(p Policy) string {
	name := p.Name()
	if d, ok := p.(*DryRun); ok {
		name += " (dry run)"
		p = d.Unwrap()
	}
	if l, ok := p.(*Levels); ok {
		lo, hi := l.Range()
		return fmt.Sprintf("%s: levels %d..%d (%d..%d channels), start at level %d (%d channels)",
			name, lo, hi, l.lm.Channels(lo), l.lm.Channels(hi), l.Level(), l.Channels())
	}
	return fmt.Sprintf("%s: start with %d channels", name, p.Channels())
}

func scriptConfig(args map[string]string) (Config, error) {
	cfg := DefaultConfig()
	cfg.Cores = 32
	var errs []error
	atoi := func(k string, dst *int) {
		if v, ok := args[k]; ok {
			x, err := strconv.Atoi(v)
			errs = append(errs, err)
			*dst = x
		}
	}
	atof := func(k string, dst *float64) {
		if v, ok := args[k]; ok {
			x, err := strconv.ParseFloat(v, 64)
			errs = append(errs, err)
			*dst = x
		}
	}
	atoi("cores", &cfg.Cores)
	atoi("max", &cfg.MaxChannels)
	atoi("min", &cfg.MinChannels)
	atoi("initial", &cfg.InitialChannels)
	atoi("down", &cfg.ScaleDownPeriods)
	atoi("warmup", &cfg.WarmUpPeriods)
	atoi("drain", &cfg.DrainPeriods)
	atoi("window", &cfg.WindowPeriods)
	atoi("cooldown", &cfg.CoolDownPeriods)
	atoi("memory", &cfg.MemoryPeriods)
	atof("gain", &cfg.MinGain)
	if v, ok := args["stat"]; ok {
		cfg.Statistic = Statistic(v)
	}
	atof("threshold", &cfg.CongestionThreshold)
	atof("alpha", &cfg.Sensitivity)
	if v, ok := args["fast"]; ok {
		cfg.FastScaling = v == "true"
	}
	if v, ok := args["period"]; ok {
		d, err := time.ParseDuration(v)
		errs = append(errs, err)
		cfg.PeriodNs = int64(d)
	}
	return cfg, errors.Join(errs...)
}

// parseRate parses 950, 12.5k, 1.2M, 3G (records/s).
func parseRate(s string) (float64, error) {
	mul := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mul, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mul, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mul, s = 1e9, strings.TrimSuffix(s, "G")
	}
	x, err := strconv.ParseFloat(s, 64)
	return x * mul, err
}

func scriptPeriod(args map[string]string, channels int) (Period, error) {
	var errs []error
	num := func(k string, def float64, rate bool) float64 {
		v, ok := args[k]
		if !ok {
			return def
		}
		var x float64
		var err error
		if rate {
			x, err = parseRate(v)
		} else {
			x, err = strconv.ParseFloat(v, 64)
		}
		errs = append(errs, err)
		return x
	}
	n := int(num("channels", float64(channels), false))
	length := int64(1e9)
	if v, ok := args["len"]; ok {
		d, err := time.ParseDuration(v)
		errs = append(errs, err)
		length = int64(d)
	}
	secs := float64(length) / 1e9
	cong := num("congestion", 0, false)
	tput := num("throughput", 0, true)
	arrival := num("arrival", tput, true)
	util := num("util", 1, false)
	backlog := num("backlog", 0, true)
	prevBacklog := num("prevbacklog", backlog, true)
	cpu := num("cpu", 0, false)
	p := Period{
		LengthNs:    length,
		Departed:    uint64(math.Round(tput * secs)),
		Arrived:     uint64(math.Round(arrival * secs)),
		Backlog:     uint64(backlog),
		PrevBacklog: uint64(prevBacklog),
		Channels:    make([]ChannelStats, max(n, 0)),
	}
	for i := range p.Channels {
		p.Channels[i] = ChannelStats{
			BlockedNs: int64(math.Round(cong * float64(length) / float64(n))),
			BusyNs:    int64(math.Round(util * float64(length))),
			CPUNs:     int64(math.Round(cpu * float64(length))),
			Records:   p.Departed / uint64(n),
		}
	}
	return p, errors.Join(errs...)
}
