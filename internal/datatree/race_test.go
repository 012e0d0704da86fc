//go:build race

package datatree

const raceEnabled = true
