// Package report is the chaos driver's per-round report, shared by the driver that writes
// it and the suite that reads it.
package report

// Round is what the chaos driver reports for one round: one JSON line of its -json output,
// read back by the suite.
type Round struct {
	Type   string `json:"type"` // "round"
	Round  int    `json:"round"`
	Warmup bool   `json:"warmup,omitempty"`
	Nodes  int    `json:"nodes"` // nodes of the job when the round started

	DurationMS   float64  `json:"duration_ms"`             // first submission -> last result
	Results      int      `json:"results"`                 // results checked (chains + actor calls + nested)
	Completed    int      `json:"completed"`               // results that returned a value (right or wrong)
	Wrong        int      `json:"wrong"`                   // values that differ from the driver's own
	Errors       []string `json:"errors,omitempty"`        // results that failed (a Get error), and suite errors
	WrongResults []string `json:"wrong_results,omitempty"` // what each wrong result was
	Hang         bool     `json:"hang,omitempty"`          // the round exceeded -round-timeout

	KillPlanned       bool    `json:"kill_planned,omitempty"`
	Killed            bool    `json:"killed"`
	KillSkipped       string  `json:"kill_skipped,omitempty"` // why a planned kill did not happen
	Victim            string  `json:"victim,omitempty"`       // node ID
	VictimPID         int     `json:"victim_pid,omitempty"`
	VictimAgentPID    int     `json:"victim_agent_pid,omitempty"`
	KillAtMS          float64 `json:"kill_at_ms,omitempty"`          // kill time after the round's start
	OutstandingAtKill int     `json:"outstanding_at_kill,omitempty"` // results not yet completed at the kill
	OutstandingChains int     `json:"outstanding_chains,omitempty"`
	OutstandingActor  int     `json:"outstanding_actor,omitempty"`
	OutstandingNested int     `json:"outstanding_nested,omitempty"`
	// RecoveryMS is the time from the kill to the completion of the last result that was
	// still outstanding at the kill (the stall callers saw); 0 when none was.
	RecoveryMS float64 `json:"recovery_ms,omitempty"`
	// The same per kind of result (0 when none of the kind was outstanding): which part
	// of the workload the stall came from.
	RecoveryChainMS  float64 `json:"recovery_chain_ms,omitempty"`
	RecoveryActorMS  float64 `json:"recovery_actor_ms,omitempty"`
	RecoveryNestedMS float64 `json:"recovery_nested_ms,omitempty"`
	// RejoinMS is the time from the kill until the job had its original number of nodes
	// again (the killed one gone, its replacement joined).
	RejoinMS float64 `json:"rejoin_ms,omitempty"`

	// Deltas over the round of the driver's ray.Stats (the runtime of the driver only:
	// retries of nested subtasks are counted by the worker process that owns them).
	TasksRetried         int64 `json:"tasks_retried"`
	ObjectsReconstructed int64 `json:"objects_reconstructed"`
}
