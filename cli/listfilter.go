package cli

import (
	"sort"
	"strings"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// Enum-valued fields of `rayctl list` filters: a value is matched whatever its case
// (state=ready is state=READY) and one that is not among the field's values is refused
// with the values there are, before any process is asked: a typo used to match nothing,
// silently, and exit 0.

// enumField is a field whose values are one of a known set.
type enumField struct {
	values  []string // as the records print them
	emptyOK bool     // the field can be empty (say, no error): FIELD= selects those
}

var boolField = enumField{values: []string{"true", "false"}}

// enumFields are the enum-valued fields of each kind of `list`, with their values from
// where the records take them.
var enumFields = map[string]map[string]enumField{
	"tasks": {
		"state": {values: []string{core.StatePendingArgs, core.StatePendingNode, core.StateRunning,
			core.StateFinished, core.StateFailed, core.StateCancelled, core.StateRetried}},
		"type":       {values: []string{"NORMAL_TASK", "ACTOR_TASK"}},
		"error_type": {values: protoEnumNames(pb.ErrorInfo_Kind_name), emptyOK: true},
	},
	"objects": {
		"state":          {values: []string{core.ObjectPending, core.ObjectReady, core.ObjectFailed, core.ObjectFreed, core.ObjectAtOwner, core.ObjectLost}},
		"reference_type": {values: []string{core.RefLocal, core.RefLineage, core.RefNone, core.RefActorHandle, core.RefBorrowed}},
	},
	"actors": {
		"state":        {values: []string{lifecycle.Pending.RayName(), lifecycle.Alive.RayName(), lifecycle.Restarting.RayName(), lifecycle.Dead.RayName()}},
		"detached":     boolField,
		"exactly_once": boolField,
	},
	"nodes": {
		// Agents are ALIVE or DEAD; a driver may also be UNREACHABLE (its lease lapsed).
		"state": {values: []string{state(true), clusterstate.DriverUnreachable, state(false)}},
		"role":  {values: []string{"head", "agent", "driver"}},
		"head":  boolField,
	},
	"workers": {
		// A worker process's agent record's states; a driver's as list nodes shows them.
		"state": {values: append(protoEnumNames(pb.JobWorker_State_name),
			clusterstate.DriverAlive, clusterstate.DriverUnreachable, clusterstate.DriverDead)},
		"worker_type": {values: []string{"WORKER", "DRIVER"}},
		"is_alive":    boolField,
	},
	"jobs": {
		"state":        {values: protoEnumNames(pb.JobInfo_State_name)},
		"driver_state": {values: []string{clusterstate.DriverAlive, clusterstate.DriverUnreachable, clusterstate.DriverDead}, emptyOK: true},
	},
	"placement-groups": {
		"state": {values: []string{"PENDING", "CREATED", "RESCHEDULING", "REMOVED"}}, // clusterstate.PlacementGroup
		"strategy": {values: []string{sched.BundlePack.String(), sched.BundleSpread.String(),
			sched.BundleStrictPack.String(), sched.BundleStrictSpread.String()}},
	},
}

// protoEnumNames are a protobuf enum's names in the order of their numbers.
func protoEnumNames(names map[int32]string) []string {
	nums := make([]int32, 0, len(names))
	for n := range names {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	out := make([]string, len(nums))
	for i, n := range nums {
		out[i] = names[n]
	}
	return out
}

// enumFilters checks the filters of a `list` of kind (its name, e.g. "objects") on
// enum-valued fields: each value becomes the field's own spelling of it, whatever its
// case; a value the field never has is a usage error that lists the values it has.
func enumFilters(kind string, filters []filter) ([]filter, error) {
	fields := enumFields[kind]
	out := make([]filter, len(filters))
	for i, f := range filters {
		out[i] = f
		e, ok := fields[f.key]
		if !ok || f.value == "" && e.emptyOK {
			continue
		}
		found := false
		for _, v := range e.values {
			if strings.EqualFold(v, f.value) {
				out[i].value, found = v, true
				break
			}
		}
		if !found {
			op := "="
			if f.neg {
				op = "!="
			}
			also := ""
			if e.emptyOK {
				also = " (or nothing, for none)"
			}
			return nil, exitf(ExitError, "filter %s%s%s: the %s of %s is one of %s%s (in any case)",
				f.key, op, f.value, f.key, kind, strings.Join(e.values, ", "), also)
		}
	}
	return out, nil
}
