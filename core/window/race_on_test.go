//go:build race

package window

// raceOn: sync.Pool drops items at random under the race detector, so
// allocation counts are not checked there.
const raceOn = true
