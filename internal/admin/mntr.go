package admin

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The mntr metric names of ZooKeeper 3.8.0 (ServerMetrics), in the order a standalone
// 3.8.0 server prints them: its metrics registry iterates hash maps, so this order is a fact
// of those names and that version, copied from the golden capture.
var (
	counterNames = []string{
		"proposal_count", "watch_bytes", "outstanding_changes_removed", "throttled_ops",
		"stale_requests_dropped", "large_requests_rejected", "insecure_admin_count",
		"connection_rejected", "cnxn_closed_without_zk_server_running",
		"sessionless_connections_expired", "looking_count", "dead_watchers_queued",
		"stale_requests", "connection_drop_count", "learner_proposal_received_count",
		"digest_mismatches_count", "dead_watchers_cleared", "response_packet_cache_hits",
		"bytes_received_count", "add_dead_watcher_stall_time", "request_throttle_wait_count",
		"requests_not_forwarded_to_commit_processor", "response_packet_cache_misses",
		"ensemble_auth_success", "prep_processor_request_queued",
		"learner_commit_received_count", "stale_replies", "connection_request_count",
		"response_bytes", "ensemble_auth_fail", "diff_count",
		"response_packet_get_children_cache_misses", "connection_revalidate_count",
		"quit_leading_due_to_disloyal_voter", "snap_count", "unrecoverable_error_count",
		"unsuccessful_handshake", "commit_count", "stale_sessions_expired",
		"response_packet_get_children_cache_hits", "sync_processor_request_queued",
		"outstanding_changes_queued", "request_commit_queued", "ensemble_auth_skip",
		"skip_learner_request_to_next_processor_count", "tls_handshake_exceeded",
		"revalidate_count",
	}
	summaryNames = []string{
		"socket_closing_time", "proposal_process_time", "leader_unavailable_time",
		"node_created_watch_count", "session_queues_drained", "write_commit_proc_req_queued",
		"connection_token_deficit", "read_commit_proc_req_queued", "node_deleted_watch_count",
		"startup_txns_load_time", "sync_processor_queue_size", "follower_sync_time",
		"prep_processor_queue_size", "fsynctime", "inflight_snap_count",
		"reads_issued_from_session_queue", "learner_request_processor_queue_size",
		"snapshottime", "unavailable_time", "startup_txns_loaded",
		"reads_after_write_in_session_queue", "requests_in_session_queue",
		"write_commit_proc_issued", "prep_process_time", "pending_session_queue_size",
		"time_waiting_empty_pool_in_commit_processor_read_ms", "commit_process_time",
		"dbinittime", "inflight_diff_count", "netty_queued_buffer_capacity", "election_time",
		"commit_commit_proc_req_queued", "sync_processor_batch_size",
		"node_children_watch_count", "write_batch_time_in_commit_processor",
		"read_commit_proc_issued", "concurrent_request_processing_in_commit_processor",
		"observer_sync_time", "node_changed_watch_count", "sync_process_time",
		"startup_snap_load_time",
	}
	percentileSummaryNames = []string{
		"prep_processor_queue_time_ms", "jvm_pause_time_ms", "close_session_prep_time",
		"read_commitproc_time_ms", "updatelatency", "local_write_committed_time_ms",
		"request_throttle_queue_time_ms", "readlatency", "quorum_ack_latency",
		"om_commit_process_time_ms", "read_final_proc_time_ms", "commit_propagation_latency",
		"dead_watchers_cleaner_latency", "write_final_proc_time_ms",
		"proposal_ack_creation_latency", "proposal_latency", "om_proposal_process_time_ms",
		"sync_processor_queue_and_flush_time_ms", "propagation_latency",
		"server_write_committed_time_ms", "sync_processor_queue_time_ms",
		"sync_processor_queue_flush_time_ms", "write_commitproc_time_ms",
	}
)

// CounterNames lists the counter metrics mntr prints, in order.
func CounterNames() []string { return slices.Clone(counterNames) }

// SummaryNames lists the avg/min/max/cnt/sum metrics mntr prints, in order.
func SummaryNames() []string { return slices.Clone(summaryNames) }

// PercentileSummaryNames lists the metrics mntr prints with p50/p95/p99/p999 too, in order.
func PercentileSummaryNames() []string { return slices.Clone(percentileSummaryNames) }

// Mntr is the answer of mntr: "zk_<name>\t<value>" lines. Integers print as such, the
// averages and the drop probability as Java doubles ("0.0", "5.7195").
func Mntr(s ServerStats) string {
	var b strings.Builder
	b.Grow(18000)
	mntrFields(s, func(k string, v any) {
		b.WriteString("zk_")
		b.WriteString(k)
		b.WriteByte('\t')
		switch v := v.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case float64:
			b.WriteString(javaDouble(v))
		case string:
			b.WriteString(v)
		}
		b.WriteByte('\n')
	})
	return b.String()
}

// mntrFields calls put with each metric mntr reports, in order: values are int64, float64
// (averages, the drop probability) or string. Both the four-letter word and the
// AdminServer's monitor command are written from it, so they list the same metrics.
func mntrFields(s ServerStats, put func(k string, v any)) {
	num := func(k string, v int64) { put(k, v) }
	dbl := func(k string, v float64) { put(k, v) }

	put("version", s.Version)
	put("server_state", s.Mode)
	if s.PeerState != "" {
		put("peer_state", s.PeerState)
	}
	if s.Mode == "observer" {
		num("observer_master_id", s.ObserverMasterID)
	}
	if s.Dump != nil {
		for _, d := range s.Dump {
			dbl(d.Key, d.Value)
		}
		return
	}

	num("ephemerals_count", int64(s.EphemeralsCount))
	num("num_alive_connections", int64(s.Connections))
	dbl("avg_latency", s.Latency.Avg())
	num("outstanding_requests", s.Outstanding)
	num("znode_count", int64(s.NodeCount))
	num("global_sessions", s.GlobalSessions)
	num("non_mtls_remote_conn_count", s.NonMTLSRemoteConns)
	num("last_client_response_size", s.ResponseSize.Last)
	num("packets_sent", s.PacketsSent)
	num("packets_received", s.PacketsReceived)
	num("max_client_response_size", s.ResponseSize.Max)
	dbl("connection_drop_probability", s.ConnectionDropProbability)
	num("watch_count", int64(s.WatchCount))
	num("auth_failed_count", s.AuthFailed)
	num("min_latency", s.Latency.min())
	num("max_file_descriptor_count", s.MaxFileDescriptors)
	num("approximate_data_size", s.ApproximateDataSize)
	num("open_file_descriptor_count", s.OpenFileDescriptors)
	num("local_sessions", s.LocalSessions)
	num("uptime", s.Uptime)
	num("max_latency", s.Latency.max())
	num("outstanding_tls_handshake", s.OutstandingTLSHandshakes)
	num("min_client_response_size", s.ResponseSize.Min)
	num("non_mtls_local_conn_count", s.NonMTLSLocalConns)
	for _, g := range s.RoleGauges {
		num(g.Name, g.Value)
	}
	for _, g := range s.QuotaGauges {
		num(g.Name, g.Value)
	}

	for _, name := range withExtra(counterNames, nil, s.Counters) {
		num(name, s.Counters[name])
	}
	for _, g := range s.QuotaExceeded {
		num(g.Name, g.Value)
	}
	summary := func(name string, v Summary, percentiles bool) {
		dbl("avg_"+name, v.Avg())
		num("min_"+name, v.min())
		num("max_"+name, v.max())
		num("cnt_"+name, v.Count)
		num("sum_"+name, v.Sum)
		if percentiles {
			num("p50_"+name, v.P50)
			num("p95_"+name, v.P95)
			num("p99_"+name, v.P99)
			num("p999_"+name, v.P999)
		}
	}
	for _, name := range withExtra(summaryNames, percentileSummaryNames, s.Summaries) {
		summary(name, s.Summaries[name], false)
	}
	for _, name := range percentileSummaryNames {
		summary(name, s.Summaries[name], true)
	}
	for _, ns := range s.ReadPerNamespace {
		summary(ns.Name+"_read_per_namespace", ns.Summary, false)
	}
	for _, ns := range s.WritePerNamespace {
		summary(ns.Name+"_write_per_namespace", ns.Summary, false)
	}
	for _, l := range s.LearnerQueueSize {
		summary(l.Name+"_learner_handler_qp_size", l.Summary, false)
	}
	for _, l := range s.LearnerQueueTime {
		summary(l.Name+"_learner_handler_qp_time_ms", l.Summary, true)
	}
	for _, a := range s.AckLatency {
		summary(a.Name+"_ack_latency", a.Summary, true)
	}
}

// withExtra returns known followed by the sorted keys of m that are in neither known nor
// also, so a metric zkd adds is printed rather than dropped.
func withExtra[V any](known, also []string, m map[string]V) []string {
	var extra []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) && !slices.Contains(also, k) {
			extra = append(extra, k)
		}
	}
	if extra == nil {
		return known
	}
	return append(slices.Clone(known), extra...)
}
