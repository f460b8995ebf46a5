package elastic

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Cores = 32
	return cfg
}

func TestNew(t *testing.T) {
	for name, want := range map[string]string{"": PolicyLevels, "levels": PolicyLevels, "ds2": PolicyDS2, "off": PolicyOff} {
		p, err := New(name, testConfig())
		if err != nil || p.Name() != want {
			t.Errorf("New(%q) = %v, %v; want policy %q", name, p, err, want)
		}
	}
	for _, name := range []string{"Levels", "DS2", "auto", "dryrun"} {
		if _, err := New(name, testConfig()); !errors.Is(err, ErrUnknownPolicy) {
			t.Errorf("New(%q) error = %v, want ErrUnknownPolicy", name, err)
		}
	}
}

func TestOffNeverChanges(t *testing.T) {
	cfg := testConfig()
	cfg.InitialChannels = 4
	p, _ := New(PolicyOff, cfg)
	if p.Channels() != 4 {
		t.Fatalf("off starts with %d channels, want 4", p.Channels())
	}
	for _, cong := range []float64{0, 0.5, 1} {
		d := p.Step(syntheticPeriod(4, cong, 1000, 1))
		if d.Changed() || d.Channels != 4 || d.Rule != RuleOff {
			t.Fatalf("off decided %v", d)
		}
	}
}

func TestDryRunKeepsChannels(t *testing.T) {
	for _, name := range []string{PolicyLevels, PolicyDS2} {
		inner, _ := New(name, testConfig())
		p := NewDryRun(inner)
		for range 5 {
			d := p.Step(syntheticPeriod(p.Channels(), 0.8, 1000, 1))
			if !d.DryRun || d.Channels <= 1 && d.Rule != RuleWarmUp && !strings.HasPrefix(d.Reason, "window") {
				t.Fatalf("%s dry run decided %v", name, d)
			}
			if p.Channels() != 1 {
				t.Fatalf("%s dry run moved to %d channels", name, p.Channels())
			}
		}
	}
}

// syntheticPeriod: n channels, congestion c, throughput tput records/s, each
// channel busy util of a 1 s period.
func syntheticPeriod(n int, c, tput, util float64) Period {
	p := Period{LengthNs: 1e9, Arrived: uint64(tput), Departed: uint64(tput), Channels: make([]ChannelStats, n)}
	for i := range p.Channels {
		p.Channels[i] = ChannelStats{BlockedNs: int64(c * 1e9 / float64(n)), BusyNs: int64(util * 1e9), Records: uint64(tput) / uint64(n)}
	}
	return p
}

// TestPolicyInvariants feeds random periods to every policy and checks the
// package invariants: decisions within the limits, on the level map and at
// most one level away for levels, and the same decisions for the same
// inputs. Levels goes up at most one level a period; down it may go several
// levels at once (P2 to the lowest level whose capacity carries the load).
func TestPolicyInvariants(t *testing.T) {
	for _, fast := range []bool{true, false} {
		for _, name := range []string{PolicyLevels, PolicyDS2, PolicyOff} {
			cfg := testConfig()
			cfg.FastScaling, cfg.MinChannels, cfg.MaxChannels, cfg.ScaleDownPeriods = fast, 2, 24, 2
			run := func(seed uint64) []Decision {
				p, err := New(name, cfg)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(seed, 1))
				var out []Decision
				n := p.Channels()
				for range 2000 {
					if rng.IntN(20) == 0 { // the runtime did something else
						n = 1 + rng.IntN(30)
					}
					per := syntheticPeriod(n, rng.Float64()*rng.Float64(), rng.Float64()*1e6, rng.Float64())
					d := p.Step(per)
					out = append(out, d)
					lm := cfg.Map()
					if d.Channels < 2 || d.Channels > 24 {
						t.Fatalf("%s fast=%v: %d channels outside [2, 24]: %v", name, fast, d.Channels, d)
					}
					if name == PolicyLevels {
						if lm.Channels(d.Level) != d.Channels {
							t.Fatalf("levels fast=%v: level %d has %d channels, decided %d", fast, d.Level, lm.Channels(d.Level), d.Channels)
						}
						if from := lm.Floor(n); lm.Channels(from) == n && d.Rule != RuleP6 && d.Level > from+1 {
							t.Fatalf("levels fast=%v: jumped from level %d to %d: %v", fast, from, d.Level, d)
						}
					}
					n = d.Channels
				}
				return out
			}
			if a, b := run(7), run(7); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s fast=%v: same inputs, different decisions", name, fast)
			}
		}
	}
}
