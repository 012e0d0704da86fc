module github.com/zkd-io/zkd

go 1.26

require github.com/go-zookeeper/zk v1.0.4 // indirect
