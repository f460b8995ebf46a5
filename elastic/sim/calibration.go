package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Calibration is what scripts/bench.sh elastic measured on one machine
// (docs/PERFORMANCE-LOG.md, "Calibrating the simulator"): the records/s of its
// job at 1, 2, … channels with the controller off and no rate limit, and
// the pause a change of the channel count costs.
//
// The file it writes has one fact a line; # starts a comment (the script
// puts the machine, date, load average and commit there):
//
//	rate 1 370317      records/s at 1 channel
//	rate 2 591419      records/s at 2 channels (every count from 1 up)
//	pause 14.3ms       the p99 channel pause of the run's changes
type Calibration struct {
	// Rates[k] is the records/s of k+1 channels.
	Rates []float64
	// PauseNs is the pause per change, in ns (0: not measured).
	PauseNs int64
	// Notes are the file's comment lines, without the "#".
	Notes []string
}

// ErrCalibration is wrapped by [ReadCalibration]'s errors.
var ErrCalibration = errors.New("sim: bad calibration")

// ReadCalibration reads a calibration file. Errors wrap [ErrCalibration]
// and name the line.
func ReadCalibration(r io.Reader) (Calibration, error) {
	var c Calibration
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if note, ok := strings.CutPrefix(s, "#"); ok {
			c.Notes = append(c.Notes, strings.TrimSpace(note))
			continue
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		bad := func(want string) error {
			return fmt.Errorf("%w: line %d: %q: want %s", ErrCalibration, line, s, want)
		}
		switch f[0] {
		case "rate":
			if len(f) != 3 {
				return c, bad("rate CHANNELS RECORDS_PER_S")
			}
			n, err1 := strconv.Atoi(f[1])
			x, err2 := strconv.ParseFloat(f[2], 64)
			if err1 != nil || err2 != nil || x <= 0 {
				return c, bad("rate CHANNELS RECORDS_PER_S, a positive rate")
			}
			if n != len(c.Rates)+1 {
				return c, bad(fmt.Sprintf("the rate of %d channels next (every count from 1 up, in order)", len(c.Rates)+1))
			}
			c.Rates = append(c.Rates, x)
		case "pause":
			if len(f) != 2 {
				return c, bad("pause DURATION")
			}
			d, err := time.ParseDuration(f[1])
			if err != nil || d < 0 {
				return c, bad("pause DURATION, e.g. 14.3ms")
			}
			c.PauseNs = int64(d)
		default:
			return c, bad("rate or pause")
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrCalibration, err)
	}
	if len(c.Rates) == 0 {
		return c, fmt.Errorf("%w: no rate", ErrCalibration)
	}
	return c, nil
}

// Model returns [Calibrated] with the measured capacities (flat beyond the
// last measured count) and, when measured, the measured pause per change;
// noise and seed as for Calibrated.
func (c Calibration) Model(noise float64, seed uint64) Model {
	m := Calibrated(c.Rates[0], noise, seed)
	m.Measured = append([]float64(nil), c.Rates...)
	if c.PauseNs > 0 {
		m.PauseNs = c.PauseNs
	}
	return m
}
