//go:build !linux

package dispatch

func maxFDs() int64 { return -1 }
