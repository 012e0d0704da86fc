module github.com/zkd-io/zkd

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-zookeeper/zk v1.0.4
)

require github.com/klauspost/compress v1.20.4
