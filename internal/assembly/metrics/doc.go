// Package metrics exports a node agent's Prometheus metrics (issue 19): a
// prometheus.Collector that reads, at scrape time, what the cluster already keeps, and a
// registry with it, the Go runtime's collectors and the GCS write latency.
//
// # Nothing per task
//
// No metric is updated per task or per object. A scrape reads:
//
//   - the machine: /proc/stat (CPU utilization since the previous scrape), /proc/meminfo;
//   - the node table and the load reports in the GCS (nodes/, load/: what the nodes of this
//     agent, its job's worker processes, already publish at most every 100 ms while it
//     changes): object store bytes in memory and spilled, objects, the raylets' queues;
//     on the head (LoadReports with drivers) also the drivers' object stores (driverload/:
//     a driver joined to the cluster, or run by rayctl job submit, holds what it Put and
//     its tasks' results; no agent starts it, so the head counts it, Role "driver");
//   - on the head (Config.Cluster) the cluster-wide gauges: the actor table (actors/) and
//     the task counts of every process with a runtime, through Config.Tasks (the agent
//     passes a taskstate gather of core.TaskQuery{Counts: true}: each process adds up the
//     per-shard counters of ended attempts and scans its live tasks);
//   - the GCS write latency, a histogram of the agent's own writes (Put, Delete, Txn through
//     TimedStore; a handful a second, never per task) and, on a head with the embedded etcd,
//     etcd's own disk histograms (etcd_disk_wal_fsync_duration_seconds,
//     etcd_disk_backend_commit_duration_seconds), which time every GCS write of the cluster.
//
// So ray_tasks and ray_actors come from the head only (summing them over agents counts each
// task once); the other metrics are per agent and Prometheus's instance label tells them
// apart.
//
// # Names
//
// Ray's names where Ray has one (docs.ray.io, "System Metrics"): ray_tasks{Name,State},
// ray_actors{Name,State}, ray_object_store_memory{Location}, ray_object_store_used_memory,
// ray_object_store_available_memory, ray_object_store_num_local_objects, ray_node_cpu_count,
// ray_node_cpu_utilization, ray_node_mem_used, ray_node_mem_available, ray_node_mem_total,
// ray_scheduler_tasks{State}, ray_gcs_storage_operation_latency_ms{Operation}. Our own, with
// the ray_go_ prefix: processes by role, spill errors, bytes being pulled, whether each
// source answered (ray_go_metrics_source_up), and on the head the counter
// ray_go_tasks_finished_total{Name,State} of the attempts that ended: ray_tasks is a gauge
// that falls as processes exit with their counts, so the head keeps each process's last
// counts of ended attempts and those of the processes that left (FinishedTotals), and the
// counter only grows (until the head restarts), for rate().
//
// Location is IN_MEMORY (the store shards' memory, where Ray says MMAP_SHM) or SPILLED.
// ray_node_cpu_count is the CPU resource the agent offers (--num-cpus), as the scheduler
// sees it; ray_go_node_cores is the machine's.
//
// A source that fails or does not answer in time (Config.Timeout) leaves its metrics out
// and sets ray_go_metrics_source_up{Source} to 0: a scrape never fails as a whole.
package metrics
