//go:build race

package edge

// raceEnabled: the race detector is on (sync.Pool then drops items at
// random, so allocation counts are not the program's).
const raceEnabled = true
