//go:build race

package nemesis

// raceEnabled: the test binary runs with the race detector, and so does the zkd it builds.
const raceEnabled = true
