package runtime

import "testing"

// The rings' wait follows the cores: a blocked side yields its thread
// before it parks only where the stages have a core to spare, the same
// condition under which CorePlacer pins them. Each row is a job shape on
// a machine of the given usable cores.
func TestRingsParkSoonWhenStagesShareCores(t *testing.T) {
	for _, c := range []struct {
		name              string
		channels, sources int // channels 0: no region; sources 0: the one source stage
		cores             int
		stages            int
		parkSoon          bool
	}{
		{"flights 4 channels, 2 cores", 4, 0, 2, 6, true},
		{"1 channel, 2 cores", 1, 0, 2, 3, true},
		{"no region, 2 cores", 0, 0, 2, 2, true},
		{"no region, 3 cores", 0, 0, 3, 2, false},
		{"as many cores as stages", 4, 0, 6, 6, true},
		{"one core to spare", 4, 0, 7, 6, false},
		{"4 channels, 16 cores", 4, 0, 16, 6, false},
		{"3 source workers, 4 channels, 8 cores", 4, 3, 8, 8, true},
		{"3 source workers, 4 channels, 9 cores", 4, 3, 9, 8, false},
	} {
		job := &Job{}
		if c.channels > 0 {
			job.Region = &Region{Channels: c.channels}
		}
		stages := jobStages(job, c.sources, c.cores)
		if stages != c.stages {
			t.Errorf("%s: %d stages, want %d", c.name, stages, c.stages)
		}
		if got := !spareCore(stages, c.cores); got != c.parkSoon {
			t.Errorf("%s: park soon %v, want %v", c.name, got, c.parkSoon)
		}
	}
}

// CorePlacer pins exactly when the rings would yield: both decide from
// spareCore on this machine's usable cores.
func TestPlacerPinsWhenRingsYield(t *testing.T) {
	cores := UsableCores()
	for _, channels := range []int{1, 2, cores - 3, cores - 2, cores - 1, cores} {
		if channels < 1 {
			continue
		}
		p := NewCorePlacer(channels, 0, 0, nil)
		if want := spareCore(stageCount(channels, 0, 0), cores); p.Pinned() != want {
			t.Errorf("%d channels on %d cores: pinned %v, want %v", channels, cores, p.Pinned(), want)
		}
	}
}
