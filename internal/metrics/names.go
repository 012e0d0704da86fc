package metrics

// The metric names Apache ZooKeeper 3.9 registers with its metrics provider, by kind. The
// Prometheus provider exports each under exactly this name (no prefix, no unit suffix:
// ZooKeeper uses the Java client 0.9.0, which adds no "_total" to counters); mntr prints
// the same names with "zk_" in front.
//
// Sources: ServerMetrics.java (counters, summaries and their detail level, the sets),
// ZooKeeperServer.registerMetrics (gauges), LeaderZooKeeperServer, FollowerZooKeeperServer
// and QuorumZooKeeperServer (the gauges of a quorum role), QuotaMetricsUtils (quota sets).
// TestZooKeeperNames checks the lists against the 3.9 source when it is at hand.
var (
	// zkGauges are the gauges every ZooKeeper server registers.
	zkGauges = []string{
		"avg_latency", "max_latency", "min_latency", "packets_received", "packets_sent",
		"num_alive_connections", "outstanding_requests", "uptime", "znode_count", "watch_count",
		"ephemerals_count", "approximate_data_size", "global_sessions", "local_sessions",
		"open_file_descriptor_count", "max_file_descriptor_count",
		"connection_drop_probability", "last_client_response_size",
		"max_client_response_size", "min_client_response_size", "outstanding_tls_handshake",
		"auth_failed_count", "non_mtls_remote_conn_count", "non_mtls_local_conn_count",
	}
	// zkRoleGauges are registered only while a server holds a quorum role: quorum_size by
	// every member of an ensemble, synced_observers by leaders and followers, the rest by
	// the leader.
	zkRoleGauges = []string{
		"quorum_size", "learners", "synced_followers", "synced_non_voting_followers",
		"synced_observers", "pending_syncs", "leader_uptime", "last_proposal_size",
		"max_proposal_size", "min_proposal_size",
	}
	zkCounters = []string{
		"add_dead_watcher_stall_time", "bytes_received_count",
		"cnxn_closed_without_zk_server_running", "commit_count", "connection_drop_count",
		"connection_rejected", "connection_request_count", "connection_revalidate_count",
		"dead_watchers_cleared", "dead_watchers_queued", "diff_count", "digest_mismatches_count",
		"ensemble_auth_fail", "ensemble_auth_skip", "ensemble_auth_success",
		"insecure_admin_count", "large_requests_rejected", "learner_commit_received_count",
		"learner_proposal_received_count", "looking_count", "outstanding_changes_queued",
		"outstanding_changes_removed", "prep_processor_request_queued", "proposal_count",
		"quit_leading_due_to_disloyal_voter", "request_commit_queued",
		"request_throttle_wait_count", "requests_not_forwarded_to_commit_processor",
		"response_bytes", "response_packet_cache_hits", "response_packet_cache_misses",
		"response_packet_get_children_cache_hits", "response_packet_get_children_cache_misses",
		"restore_error_count", "restore_rate_limited_count", "revalidate_count",
		"sessionless_connections_expired", "skip_learner_request_to_next_processor_count",
		"snap_count", "snapshot_error_count", "snapshot_rate_limited_count", "stale_replies",
		"stale_requests", "stale_requests_dropped", "stale_sessions_expired",
		"sync_processor_request_queued", "throttled_ops", "tls_handshake_exceeded",
		"unrecoverable_error_count", "unsuccessful_handshake", "watch_bytes",
	}
	// zkBasicSummaries are DetailLevel.BASIC: the Prometheus provider gives them the
	// median only.
	zkBasicSummaries = []string{
		"commit_commit_proc_req_queued", "commit_process_time",
		"concurrent_request_processing_in_commit_processor", "connection_token_deficit",
		"dbinittime", "election_time", "follower_sync_time", "fsynctime", "inflight_diff_count",
		"inflight_snap_count", "leader_unavailable_time", "learner_request_processor_queue_size",
		"netty_queued_buffer_capacity", "node_changed_watch_count", "node_children_watch_count",
		"node_created_watch_count", "node_deleted_watch_count", "observer_sync_time",
		"pending_session_queue_size", "prep_process_time", "prep_processor_queue_size",
		"proposal_process_time", "read_commit_proc_issued", "read_commit_proc_req_queued",
		"reads_after_write_in_session_queue", "reads_issued_from_session_queue",
		"requests_in_session_queue", "restore_time", "session_queues_drained", "snapshottime",
		"socket_closing_time", "startup_snap_load_time", "startup_txns_load_time",
		"startup_txns_loaded", "sync_process_time", "sync_processor_batch_size",
		"sync_processor_queue_size", "time_waiting_empty_pool_in_commit_processor_read_ms",
		"unavailable_time", "write_batch_time_in_commit_processor", "write_commit_proc_issued",
		"write_commit_proc_req_queued",
	}
	// zkAdvancedSummaries are DetailLevel.ADVANCED: median, 0.9 and 0.99 quantiles.
	zkAdvancedSummaries = []string{
		"close_session_prep_time", "commit_propagation_latency", "dead_watchers_cleaner_latency",
		"jvm_pause_time_ms", "local_write_committed_time_ms", "om_commit_process_time_ms",
		"om_proposal_process_time_ms", "prep_processor_queue_time_ms", "propagation_latency",
		"proposal_ack_creation_latency", "proposal_latency", "quorum_ack_latency",
		"read_commitproc_time_ms", "read_final_proc_time_ms", "readlatency",
		"request_throttle_queue_time_ms", "server_write_committed_time_ms",
		"sync_processor_queue_and_flush_time_ms", "sync_processor_queue_flush_time_ms",
		"sync_processor_queue_time_ms", "updatelatency", "write_commitproc_time_ms",
		"write_final_proc_time_ms",
	}
	// The labelled sets (label "key"): they have series only once a key is observed.
	zkBasicSummarySets    = []string{"learner_handler_qp_size", "read_per_namespace", "write_per_namespace"}
	zkAdvancedSummarySets = []string{"ack_latency", "learner_handler_qp_time_ms"}
	zkCounterSets         = []string{"quota_exceeded_error_per_namespace"}
	zkGaugeSets           = []string{
		"quota_count_limit_per_namespace", "quota_bytes_limit_per_namespace",
		"quota_count_usage_per_namespace", "quota_bytes_usage_per_namespace",
	}
)

// Quantiles of ZooKeeper's Prometheus summaries, with the errors its provider allows.
var (
	basicObjectives    = map[float64]float64{0.5: 0.05}
	advancedObjectives = map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}
)

// setLabel is the one label of ZooKeeper's labelled sets.
const setLabel = "key"
