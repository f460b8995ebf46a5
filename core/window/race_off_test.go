//go:build !race

package window

const raceOn = false
