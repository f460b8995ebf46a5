package tier

import "testing"

func TestPick(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{{"", 3}, {"0", 3}, {"1", 20}, {"yes", 20}} {
		t.Setenv(Env, c.env)
		if got := Pick(3, 20); got != c.want {
			t.Errorf("%s=%q: Pick(3, 20) = %d, want %d", Env, c.env, got, c.want)
		}
		if Long() != (c.want == 20) {
			t.Errorf("%s=%q: Long() = %v", Env, c.env, Long())
		}
	}
}
