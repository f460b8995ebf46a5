//go:build race

package ring

// raceOn scales stress tests down: the race detector slows atomics ~10×.
const raceOn = true
