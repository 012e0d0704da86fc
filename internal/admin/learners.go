package admin

import "time"

// LearnerInfo is one learner connection as ZooKeeper's LearnerHandler.getLearnerHandlerInfo
// reports it, for the observers command.
type LearnerInfo struct {
	// Remote is Java's InetSocketAddress.toString of the learner's end ("/127.0.0.1:40112":
	// LearnerHandler keeps the leading "/", unlike a client connection's).
	Remote      string
	Sid         int64
	Established time.Time // when the connection was accepted (printed as epoch ms)
	// QueuedPackets are the packets queued and not yet taken by the connection's writer;
	// QueuedPacketsSize their size as LearnerHandler.packetSize estimates it (28 bytes
	// plus the data).
	QueuedPackets, QueuedPacketsSize int64
	// PacketsReceived counts what the learner sent after it acked NEWLEADER, Requests the
	// REQUESTs among them, PacketsSent the packets written to it; LastZxid is the last
	// positive zxid written to it, -1 before one.
	PacketsReceived, PacketsSent, Requests, LastZxid int64
}

// json is getLearnerHandlerInfo's map, in its order. Jackson writes the Date as epoch ms.
func (l LearnerInfo) json() Object {
	return Object{
		{"remote_socket_address", l.Remote},
		{"sid", l.Sid},
		{"established", l.Established.UnixMilli()},
		{"queued_packets", l.QueuedPackets},
		{"queued_packets_size", l.QueuedPacketsSize},
		{"packets_received", l.PacketsReceived},
		{"packets_sent", l.PacketsSent},
		{"requests", l.Requests},
		{"last_zxid", l.LastZxid},
	}
}

// ObserversJSON is the fields of observers (obsr, SyncedObserverConsCommand): the synced
// observers' count and each one's connection.
func ObserversJSON(observers []LearnerInfo) Object {
	list := make([]Object, 0, len(observers))
	for _, l := range observers {
		list = append(list, l.json())
	}
	return Object{{"synced_observers", len(observers)}, {"observers", list}}
}
