package sim

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamd/elastic"
	"streamd/internal/tier"
)

// TestScenarios runs testdata/scenarios/*.txt: the goals of the elastic
// controllers (stability under noise, steps, sine loads, flat and
// sub-linear capacity, a downstream bottleneck, no permanent shortfall),
// each a simulated run and the goals it must meet. Files named *-long.txt
// run in the long tier only (internal/tier). Each case is a command
// line, a line "----", the expected output and a blank line; lines starting
// with # are comments. -rewrite regenerates the expected output, but a
// goal that fails ("FAIL" in the output) fails the test all the same.
//
// Commands:
//
//	run <levels|ds2|off> periods=N load=<const:R | steps:P=R,P=R,… | sine:MEAN/AMP/CYCLE>
//	    [model keys] [config keys]
//	goal changes [from=P] [to=P] max=N       changes of the channel count in [from, to)
//	goal cycles cycle=C [from=K] max=N       the most changes in one cycle from cycle K on
//	goal channels at=P [min=N] [max=N]       the channel count in period P
//	goal maxch [from=P] [to=P] max=N         the most channels in [from, to)
//	goal served [from=P] [to=P] min=F        records processed / records offered
//	goal backlog [from=P] [to=P] max=R       the largest backlog (records) at a period's end
//	goal react max=N                         periods from a congestion onset (with capacity
//	                                         to spare) to a change up
//
// Loads: a rate written 1.3x is 1.3 × one channel's rate.
//
// Model keys (default: Calibrated(100k, 0.05, 1)): calib=FILE (a
// calibration, see Calibration; replaces rate=) rate= noise= capnoise=
// steal= stealshare= seed= knee= beyond= cores= serial= bottleneck= pause= skip= cpu=
// backlog= lossy= catchup= efficiency=. Config keys (default: DefaultConfig with
// cores=16): limit= min= initial= threshold= alpha= down= warmup= drain=
// window= stat= cooldown= gain= memory=.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if strings.HasSuffix(f, "-long.txt") {
				tier.SkipUnlessLong(t)
			}
			runScenarioFile(t, f)
		})
	}
}

type scenarioCase struct {
	pos      string
	comments []string
	cmd      string
	want     string
}

func runScenarioFile(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []scenarioCase
	var pre []string
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			pre = append(pre, s)
			continue
		}
		c := scenarioCase{pos: fmt.Sprintf("%s:%d", path, line), comments: pre, cmd: s}
		pre = nil
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s: want ---- after the command", c.pos)
		}
		line++
		var out []string
		for sc.Scan() {
			line++
			if sc.Text() == "" {
				break
			}
			out = append(out, sc.Text())
		}
		c.want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	f.Close()
	var b strings.Builder
	st := &scenarioState{}
	for _, c := range cases {
		got := st.run(c.cmd)
		if strings.Contains(got, "FAIL") || strings.HasPrefix(got, "error") {
			t.Errorf("%s: %s\n%s", c.pos, c.cmd, got)
		} else if got != c.want && !*rewrite {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", c.pos, c.cmd, got, c.want)
		}
		for _, l := range c.comments {
			b.WriteString(l + "\n")
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n\n", c.cmd, got)
	}
	for _, l := range pre {
		b.WriteString(l + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type scenarioState struct {
	tl    Timeline
	m     Model
	cfg   elastic.Config
	name  string
	limit int
}

func (s *scenarioState) run(line string) string {
	fields := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	var err error
	switch fields[0] {
	case "run":
		if len(pos) != 1 {
			return "error: run wants a policy name"
		}
		return s.runCmd(pos[0], args)
	case "goal":
		if s.tl == nil {
			return "error: goal before run"
		}
		if len(pos) != 1 {
			return "error: goal wants one kind"
		}
		var out string
		out, err = s.goal(pos[0], args)
		if err == nil {
			return out
		}
	default:
		err = fmt.Errorf("unknown command %s", fields[0])
	}
	return "error: " + err.Error()
}

func (s *scenarioState) runCmd(name string, args map[string]string) string {
	p := argParser{args: args}
	m := Calibrated(p.rate("rate", 100e3), p.float("noise", 0.05), uint64(p.int("seed", 1)))
	if path, ok := args["calib"]; ok {
		c, err := readCalibration(path)
		if err != nil {
			return "error: " + err.Error()
		}
		m = c.Model(m.Noise, m.Seed)
	}
	m.CapNoise = p.float("capnoise", 0)
	m.Steal = p.float("steal", 0)
	m.StealShare = p.float("stealshare", 0)
	m.Efficiency = p.float("efficiency", 0)
	m.Knee = p.int("knee", 0)
	m.Beyond = p.float("beyond", 0)
	m.Cores = p.int("cores", 0)
	m.SerialStages = p.float("serial", m.SerialStages)
	m.Bottleneck = p.rate("bottleneck", 0)
	m.PauseNs = int64(p.dur("pause", time.Duration(m.PauseNs)))
	m.SkipChangePeriod = p.bool("skip", m.SkipChangePeriod)
	m.ThreadCPU = p.bool("cpu", m.ThreadCPU)
	m.ReportBacklog = p.bool("backlog", m.ReportBacklog)
	m.Lossy = p.bool("lossy", false)
	m.CatchUp = p.bool("catchup", false)
	cfg := elastic.DefaultConfig()
	cfg.Cores = p.int("limit", 16)
	cfg.MinChannels = p.int("min", cfg.MinChannels)
	cfg.InitialChannels = p.int("initial", 0)
	cfg.CongestionThreshold = p.float("threshold", cfg.CongestionThreshold)
	cfg.Sensitivity = p.float("alpha", cfg.Sensitivity)
	cfg.ScaleDownPeriods = p.int("down", cfg.ScaleDownPeriods)
	cfg.WarmUpPeriods = p.int("warmup", cfg.WarmUpPeriods)
	cfg.DrainPeriods = p.int("drain", cfg.DrainPeriods)
	setConfigExtras(&cfg, &p)
	load, err := parseLoad(args["load"], m.curve(1))
	periods := p.int("periods", 0)
	if err = errors.Join(err, p.err); err != nil {
		return "error: " + err.Error()
	}
	pol, err := elastic.New(name, cfg)
	if err != nil {
		return "error: " + err.Error()
	}
	s.tl, s.m, s.cfg, s.name, s.limit = Run(m, pol, load, periods), m, cfg, name, cfg.Limit()
	tl := s.tl
	lo, hi := tl[0].Channels, 0
	for _, x := range tl {
		lo, hi = min(lo, x.Channels), max(hi, x.Channels)
	}
	f := tl.Final()
	return fmt.Sprintf("%d changes; channels %d..%d, final %d; served %.1f %%; backlog max %s, final %s",
		tl.Changes(0, len(tl)), lo, hi, f.Channels, 100*tl.Served(0, len(tl)), fmtRecs(tl.MaxBacklog(0, len(tl))), fmtRecs(f.Backlog))
}

func (s *scenarioState) goal(kind string, args map[string]string) (string, error) {
	p := argParser{args: args}
	tl := s.tl
	from, to := p.int("from", 0), p.int("to", len(tl))
	verdict := func(ok bool, format string, a ...any) string {
		if ok {
			return "ok: " + fmt.Sprintf(format, a...)
		}
		return "FAIL: " + fmt.Sprintf(format, a...)
	}
	var out string
	switch kind {
	case "changes":
		mx := p.int("max", 0)
		k := tl.Changes(from, to)
		out = verdict(k <= mx, "%d changes in [%d, %d), want <= %d", k, from, to, mx)
	case "cycles":
		cycle, first, mx := p.int("cycle", 1), p.int("from", 1), p.int("max", 0)
		worst, at := 0, -1
		for c := first; (c+1)*cycle <= len(tl); c++ {
			if k := tl.Changes(c*cycle, (c+1)*cycle); k > worst {
				worst, at = k, c
			}
		}
		out = verdict(worst <= mx, "at most %d changes in a cycle from cycle %d on (cycle %d), want <= %d", worst, first, at, mx)
	case "channels":
		at := p.int("at", len(tl)-1)
		lo, hi := p.int("min", 0), p.int("max", math.MaxInt)
		n := tl[at].Channels
		out = verdict(n >= lo && n <= hi, "%d channels in period %d, want %s", n, at, rangeWords(lo, hi))
	case "maxch":
		mx := p.int("max", 0)
		n := tl.MaxChannels(from, to)
		out = verdict(n <= mx, "at most %d channels in [%d, %d), want <= %d", n, from, to, mx)
	case "served":
		mn := p.float("min", 1)
		r := tl.Served(from, to)
		out = verdict(r >= mn, "served %.2f %% of the offered load in [%d, %d), want >= %.1f %%", 100*r, from, to, 100*mn)
	case "backlog":
		mx := p.rate("max", 0)
		b := tl.MaxBacklog(from, to)
		out = verdict(b <= mx, "backlog at most %s in [%d, %d), want <= %s", fmtRecs(b), from, to, fmtRecs(mx))
	case "react":
		mx := p.int("max", 0)
		worst, at := s.react()
		out = verdict(worst <= mx, "scaled up at most %d periods after a congestion onset (period %d), want <= %d", worst, at, mx)
	default:
		return "", fmt.Errorf("unknown goal %s", kind)
	}
	return out, p.err
}

// react is the longest time, in periods, from a congestion onset (a
// congested period after one that was not, with a channel count below the
// limit that more channels would help) to the next change up, and the
// onset's period; a run that ends congested counts to its end.
func (s *scenarioState) react() (worst, at int) {
	tl, thr := s.tl, s.cfg.CongestionThreshold
	at = -1
	for i := 1; i < len(tl); i++ {
		x := tl[i]
		if !(x.Congestion > thr && tl[i-1].Congestion <= thr && !tl[i-1].Hidden) {
			continue
		}
		if x.Channels >= s.limit || s.m.Capacity(x.Channels+1) <= s.m.Capacity(x.Channels)*1.01 ||
			(s.m.Bottleneck > 0 && x.Throughput >= 0.99*s.m.Bottleneck) {
			continue
		}
		j := i
		for j < len(tl) && !(tl[j].Decision.Channels > tl[j].Channels && !tl[j].Hidden) {
			if tl[j].Congestion <= thr && j > i { // the congestion passed by itself
				break
			}
			j++
		}
		if j < len(tl) && tl[j].Congestion <= thr && !(tl[j].Decision.Channels > tl[j].Channels) {
			continue
		}
		if d := j - i + 1; d > worst {
			worst, at = d, i
		}
	}
	return worst, at
}

func rangeWords(lo, hi int) string {
	switch {
	case lo == hi:
		return fmt.Sprint(lo)
	case hi == math.MaxInt:
		return fmt.Sprintf(">= %d", lo)
	case lo == 0:
		return fmt.Sprintf("<= %d", hi)
	}
	return fmt.Sprintf("in [%d, %d]", lo, hi)
}

// fmtRecs formats a record count compactly: 950, 12.3k, 1.2M.
func fmtRecs(x float64) string {
	switch {
	case x >= 999.5e3:
		return fmt.Sprintf("%.3gM", x/1e6)
	case x >= 999.5:
		return fmt.Sprintf("%.3gk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// readCalibration reads a calibration file (path relative to the package).
func readCalibration(path string) (Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return Calibration{}, err
	}
	defer f.Close()
	c, err := ReadCalibration(f)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// parseLoad parses const:R, steps:P=R,P=R,… and sine:MEAN/AMP/CYCLE. A
// rate written 1.3x is 1.3 × unit (one channel's rate).
func parseLoad(s string, unit float64) (Load, error) {
	parseRate := func(r string) (float64, error) {
		if f, ok := strings.CutSuffix(r, "x"); ok {
			x, err := strconv.ParseFloat(f, 64)
			return x * unit, err
		}
		return parseRate(r)
	}
	kind, spec, _ := strings.Cut(s, ":")
	switch kind {
	case "const":
		r, err := parseRate(spec)
		return Constant(r), err
	case "steps":
		var pts []Point
		for _, part := range strings.Split(spec, ",") {
			at, r, _ := strings.Cut(part, "=")
			p, err1 := strconv.Atoi(at)
			x, err2 := parseRate(r)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("load %q: %w", s, err)
			}
			pts = append(pts, Point{p, x})
		}
		return Schedule(pts...), nil
	case "sine":
		parts := strings.Split(spec, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("load %q: want sine:MEAN/AMP/CYCLE", s)
		}
		mean, err1 := parseRate(parts[0])
		amp, err2 := strconv.ParseFloat(parts[1], 64)
		cycle, err3 := strconv.Atoi(parts[2])
		return Sine(mean, amp, cycle), errors.Join(err1, err2, err3)
	}
	return nil, fmt.Errorf("load %q: want const:, steps: or sine:", s)
}

// parseRate parses 950, 12.5k, 1.2M (records/s or records).
func parseRate(s string) (float64, error) {
	mul := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mul, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mul, s = 1e6, strings.TrimSuffix(s, "M")
	}
	x, err := strconv.ParseFloat(s, 64)
	return x * mul, err
}

type argParser struct {
	args map[string]string
	err  error
}

func (p *argParser) get(k string, parse func(string) error) {
	if v, ok := p.args[k]; ok {
		if err := parse(v); err != nil {
			p.err = errors.Join(p.err, fmt.Errorf("%s=%s: %w", k, v, err))
		}
	}
}

func (p *argParser) int(k string, def int) int {
	p.get(k, func(v string) (err error) { def, err = strconv.Atoi(v); return })
	return def
}

func (p *argParser) float(k string, def float64) float64 {
	p.get(k, func(v string) (err error) { def, err = strconv.ParseFloat(v, 64); return })
	return def
}

func (p *argParser) rate(k string, def float64) float64 {
	p.get(k, func(v string) (err error) { def, err = parseRate(v); return })
	return def
}

func (p *argParser) bool(k string, def bool) bool {
	p.get(k, func(v string) (err error) { def, err = strconv.ParseBool(v); return })
	return def
}

func (p *argParser) dur(k string, def time.Duration) time.Duration {
	p.get(k, func(v string) (err error) { def, err = time.ParseDuration(v); return })
	return def
}
