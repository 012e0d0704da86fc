package peer

import "errors"

// Message is a payload received from server From.
type Message struct {
	From    int64
	Payload []byte
}

// Transport sends payloads to servers by sid and delivers the ones they send. Sending never
// blocks and never fails: like ZooKeeper's, the transport drops messages it cannot deliver
// (the election protocol resends). Sending to one's own sid loops the payload back.
type Transport interface {
	Send(to int64, payload []byte)
	// Recv delivers received messages. The channel is closed by Close.
	Recv() <-chan Message
	Close() error
}

// ErrClosed is returned by operations on a closed transport.
var ErrClosed = errors.New("peer: transport closed")

// deliver puts m on ch without blocking; when ch is full the oldest message is dropped, as
// in ZooKeeper's CircularBlockingQueue. It reports whether something was dropped.
func deliver(ch chan Message, m Message) (dropped bool) {
	for {
		select {
		case ch <- m:
			return dropped
		default:
		}
		select {
		case <-ch:
			dropped = true
		default:
		}
	}
}
