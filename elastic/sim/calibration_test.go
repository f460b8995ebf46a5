package sim

import (
	"errors"
	"strings"
	"testing"
)

// A calibration file gives the model its measured capacities (flat beyond
// the last count) and pause; a malformed one names the line.
func TestCalibration(t *testing.T) {
	c, err := ReadCalibration(strings.NewReader("# machine, date\nrate 1 243000\n\nrate 2 367000\npause 14.3ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Model(0, 1)
	for n, want := range map[int]float64{1: 243e3, 2: 367e3, 3: 367e3, 8: 367e3} {
		if got := m.Capacity(n); got != want {
			t.Errorf("Capacity(%d) = %v, want %v", n, got, want)
		}
	}
	if m.PauseNs != 14.3e6 || len(c.Notes) != 1 || c.Notes[0] != "machine, date" {
		t.Errorf("pause %d ns, notes %q: want 14.3 ms and the comment", m.PauseNs, c.Notes)
	}
	if got := Calibrated(1, 0, 1).PauseNs; got != (Calibration{Rates: []float64{1}}).Model(0, 1).PauseNs {
		t.Errorf("no pause measured: want Calibrated's %d ns", got)
	}
	for _, bad := range []string{"rate 2 100\n", "rate 1 100\nrate 3 200\n", "rate 1 -5\n", "pause soon\n", "speed 1 100\n", "# only a comment\n"} {
		if _, err := ReadCalibration(strings.NewReader(bad)); !errors.Is(err, ErrCalibration) {
			t.Errorf("%q: err %v, want ErrCalibration", bad, err)
		}
	}
	if _, err := ReadCalibration(strings.NewReader("rate 1 100\nrate 3 200\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err %v, want it to name line 2", err)
	}
}
