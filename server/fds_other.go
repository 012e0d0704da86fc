//go:build !linux

package server

func maxFDs() int64 { return -1 }
