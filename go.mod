module github.com/zkd-io/zkd

go 1.26
