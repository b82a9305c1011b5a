package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// ErrNameTaken is returned when a named actor is created under a name in use.
var ErrNameTaken = errors.New("actors: actor name already taken")

// ErrUnknownClass is returned for an actor class name no RegisterClass registered.
var ErrUnknownClass = errors.New("actors: unknown actor class")

// ErrNoSuchActor is returned for an actor ID or name the actor table does not have.
var ErrNoSuchActor = errors.New("actors: no such actor")

// Table reads and steps the GCS actor table. Every change goes through Step: a read, the
// pure lifecycle transition, and a write guarded by the record's revision (the fence of
// DESIGN §5), retried when another runtime changed the record meanwhile.
type Table struct {
	Store gcs.Store
}

// StateOf returns the lifecycle state recorded in info.
func StateOf(info *pb.ActorInfo) lifecycle.State {
	return lifecycle.State{
		Config: lifecycle.Config{ActorID: idString(info.ActorId), MaxRestarts: int(info.MaxRestarts),
			Detached: info.Detached, AtMostOnce: info.AtMostOnce},
		Phase:       lifecycle.Phase(info.Phase),
		Incarnation: info.Incarnation,
		Restarts:    int(info.Restarts),
		Node:        info.Node,
		OwnerDead:   info.OwnerDead,
		Checkpoint:  lifecycle.Checkpoint{Seq: info.CheckpointSeq, Ref: info.CheckpointRef},
		Cause:       lifecycle.Cause(info.Cause),
		Detail:      info.Detail,
		Waiting:     info.Waiting,
	}
}

// setState writes s's lifecycle fields into info.
func setState(info *pb.ActorInfo, s lifecycle.State) {
	info.Phase = int32(s.Phase)
	info.Incarnation = s.Incarnation
	info.Restarts = int32(s.Restarts)
	info.Node = s.Node
	info.OwnerDead = s.OwnerDead
	info.CheckpointSeq = s.Checkpoint.Seq
	info.CheckpointRef = s.Checkpoint.Ref
	info.Cause = int32(s.Cause)
	info.Detail = s.Detail
	info.Waiting = s.Waiting
}

// maxHistory bounds an actor record's history (ActorInfo.history): its first transition and
// the newest ones. An actor restarted without end keeps a record of bounded size.
const maxHistory = 16

// noteTransition appends to info's history the change from before to next when it is one
// a user sees (a phase, an incarnation, a node, the start of a wait: not a checkpoint's
// progress), at now. The start of a wait is entered with why it waits as its detail.
func noteTransition(info *pb.ActorInfo, before, next lifecycle.State, now time.Time) {
	if next.Phase == before.Phase && next.Incarnation == before.Incarnation && next.Node == before.Node {
		if before.Waiting == "" && next.Waiting != "" {
			w := next
			w.Detail = next.Waiting
			appendTransition(info, w, now)
		}
		return
	}
	appendTransition(info, next, now)
}

// appendTransition appends the entry into state next, at now, to info's history.
func appendTransition(info *pb.ActorInfo, next lifecycle.State, now time.Time) {
	t := &pb.ActorTransition{Phase: int32(next.Phase), UnixMs: now.UnixMilli(), Incarnation: next.Incarnation,
		Node: next.Node, Cause: int32(next.Cause), Detail: next.Detail}
	if len(info.History) >= maxHistory { // keep the first; drop the oldest after it
		copy(info.History[1:], info.History[2:])
		info.History = info.History[:len(info.History)-1]
	}
	info.History = append(info.History, t)
}

// publishOps are the writes that make info the actor's record: the record itself, its
// placement (set while an instance runs or starts somewhere, deleted otherwise) and, once
// the actor is dead, the removal of its name, method log and checkpoint.
func publishOps(info *pb.ActorInfo) ([]gcs.Op, error) {
	b, err := proto.Marshal(info)
	if err != nil {
		return nil, err
	}
	id := idString(info.ActorId)
	ops := []gcs.Op{{Kind: gcs.OpPut, Key: gcs.ActorKey(id), Value: b}}
	if info.Node != "" && lifecycle.Phase(info.Phase) != lifecycle.Dead {
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: gcs.PlacementKey(id), Value: []byte(info.Node)})
	} else {
		ops = append(ops, gcs.Op{Kind: gcs.OpDelete, Key: gcs.PlacementKey(id)})
	}
	if lifecycle.Phase(info.Phase) == lifecycle.Dead {
		if info.Name != "" {
			ops = append(ops, gcs.Op{Kind: gcs.OpDelete, Key: gcs.ActorNameKey(info.Namespace, info.Name)})
		}
		ops = append(ops,
			gcs.Op{Kind: gcs.OpDeletePrefix, Key: gcs.ActorLogActorPrefix(id)},
			gcs.Op{Kind: gcs.OpDeletePrefix, Key: gcs.CheckpointPrefix(id)})
	}
	return ops, nil
}

// Create writes a new actor's record, New's state, and reserves its name. info.Waiting, if
// set, is why the new actor waits from the start (it is in the record's history).
func (t *Table) Create(ctx context.Context, info *pb.ActorInfo) (*pb.ActorInfo, []lifecycle.Action, error) {
	s, actions, err := lifecycle.New(StateOf(info).Config)
	if err != nil {
		return nil, nil, err
	}
	s.Waiting = info.Waiting // why it waits from the start (an actor of a placement group not placed yet)
	setState(info, s)
	info.History = nil
	appendTransition(info, s, time.Now())
	ops, err := publishOps(info)
	if err != nil {
		return nil, nil, err
	}
	id := idString(info.ActorId)
	cmps := []gcs.Cmp{{Key: gcs.ActorKey(id), ModRev: 0}}
	if info.Name != "" {
		cmps = append(cmps, gcs.Cmp{Key: gcs.ActorNameKey(info.Namespace, info.Name), ModRev: 0})
		ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: gcs.ActorNameKey(info.Namespace, info.Name), Value: []byte(id)})
	}
	ok, _, err := t.Store.Txn(ctx, cmps, ops)
	if err != nil {
		return nil, nil, fmt.Errorf("actors: create actor %s: %w", id, err)
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q in namespace %q%s (pick another name, or get it with ray.GetActor)",
			ErrNameTaken, info.Name, info.Namespace, t.nameHolder(ctx, info.Namespace, info.Name))
	}
	return info, actions, nil
}

// nameHolder describes the actor that holds a name, for the error of a creation that
// found it taken (", held by actor ID (class, job J, phase)"); "" when it cannot be read
// (the name was freed meanwhile, or the GCS did not answer). It is read only on that
// error, so a creation that gets its name costs nothing more.
func (t *Table) nameHolder(ctx context.Context, namespace, name string) string {
	kv, found, err := t.Store.Get(ctx, gcs.ActorNameKey(namespace, name))
	if err != nil || !found || len(kv.Value) == 0 {
		return ""
	}
	id := string(kv.Value)
	info, _, err := t.Get(ctx, id)
	if err != nil {
		return ", held by actor " + id
	}
	kind := ""
	if info.Detached {
		kind = "detached, "
	}
	return fmt.Sprintf(", held by actor %s (%s, %sjob %s, %s)", id, info.Class, kind, info.JobId, lifecycle.Phase(info.Phase))
}

// Get reads an actor's record and its revision.
func (t *Table) Get(ctx context.Context, actorID string) (*pb.ActorInfo, int64, error) {
	kv, found, err := t.Store.Get(ctx, gcs.ActorKey(actorID))
	if err != nil {
		return nil, 0, fmt.Errorf("actors: read actor %s: %w", actorID, err)
	}
	if !found {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoSuchActor, actorID)
	}
	info, err := decodeInfo(kv.Value)
	if err == nil && idString(info.ActorId) != actorID {
		err = fmt.Errorf("%w: the record names actor %s", errCorruptRecord, idString(info.ActorId))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("actors: actor %s: %w", actorID, err)
	}
	return info, kv.ModRev, nil
}

// Bounds of an actor record that decodes (decodeInfo).
const (
	maxRecordResources = 64 // distinct resources an actor asks for
	maxRecordCtorArgs  = 1 << 10
)

var errCorruptRecord = errors.New("corrupt actor record")

// decodeInfo decodes an actor record read from the GCS and checks what the table, the
// manager and the lifecycle rely on: an actor ID of ids.ActorIDLen bytes, a known phase
// and cause, restart counts in range, a bounded list of resources with amounts of at
// least 0 (placement walks it for every node), and constructor arguments that name an
// object ID of the right length when they are references. Anything else is
// errCorruptRecord, with what is wrong.
func decodeInfo(value []byte) (*pb.ActorInfo, error) {
	info := &pb.ActorInfo{}
	if err := proto.Unmarshal(value, info); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorruptRecord, err)
	}
	bad := func(format string, args ...any) (*pb.ActorInfo, error) {
		return nil, fmt.Errorf("%w: %s", errCorruptRecord, fmt.Sprintf(format, args...))
	}
	switch {
	case len(info.ActorId) != ids.ActorIDLen:
		return bad("actor ID of %d bytes, want %d", len(info.ActorId), ids.ActorIDLen)
	case info.Phase < int32(lifecycle.Pending) || info.Phase > int32(lifecycle.Dead):
		return bad("phase %d", info.Phase)
	case info.Cause < int32(lifecycle.CauseNone) || info.Cause > int32(lifecycle.LastCause):
		return bad("cause %d", info.Cause)
	case info.MaxRestarts < lifecycle.Infinite || info.Restarts < 0:
		return bad("max restarts %d, restarts %d", info.MaxRestarts, info.Restarts)
	case len(info.Resources) > maxRecordResources:
		return bad("%d resources, at most %d", len(info.Resources), maxRecordResources)
	case len(info.CtorArgs) > maxRecordCtorArgs:
		return bad("%d constructor arguments, at most %d", len(info.CtorArgs), maxRecordCtorArgs)
	case info.BundleIndex < -1:
		return bad("placement group bundle %d (a bundle's index, or -1 for any)", info.BundleIndex)
	}
	for _, q := range info.Resources {
		if q.Amount < 0 {
			return bad("resource %q: amount %d", q.Name, q.Amount)
		}
	}
	for i, a := range info.CtorArgs {
		if a.IsRef && a.Data == nil && len(a.ObjectId) != ids.ObjectIDLen {
			return bad("constructor argument %d: object ID of %d bytes, want %d", i+1, len(a.ObjectId), ids.ObjectIDLen)
		}
	}
	return info, nil
}

// Lookup finds a named actor's ID.
func (t *Table) Lookup(ctx context.Context, namespace, name string) (string, error) {
	kv, found, err := t.Store.Get(ctx, gcs.ActorNameKey(namespace, name))
	if err != nil {
		return "", fmt.Errorf("actors: look up actor %q: %w", name, err)
	}
	if !found {
		return "", fmt.Errorf("%w named %q in namespace %q", ErrNoSuchActor, name, namespace)
	}
	return string(kv.Value), nil
}

// Step applies ev to the actor's record. It returns the record after the step, the
// actions the caller must carry out (PublishState is done), and whether the state
// changed. A refused event returns the lifecycle's *TransitionError.
func (t *Table) Step(ctx context.Context, actorID string, ev lifecycle.Event) (*pb.ActorInfo, []lifecycle.Action, bool, error) {
	return t.StepWith(ctx, actorID, ev, nil)
}

// MoveAffinity moves an actor bound to a node (ActorInfo.affinity_node: its placement
// group bundle's) from node from to node to, when its record still names from and it is
// not dead: its placement group placed the bundle again after from died, and the actor's
// restart goes to the bundle's new node. The record's change makes the Manager look at
// the actor again. It reports whether the record changed.
func (t *Table) MoveAffinity(ctx context.Context, actorID, from, to string) (bool, error) {
	for attempt := 0; ; attempt++ {
		info, rev, err := t.Get(ctx, actorID)
		if err != nil {
			return false, err
		}
		if info.AffinityNode != from || lifecycle.Phase(info.Phase) == lifecycle.Dead {
			return false, nil
		}
		info.AffinityNode = to
		ops, err := publishOps(info)
		if err != nil {
			return false, err
		}
		ok, _, err := t.Store.Txn(ctx, []gcs.Cmp{{Key: gcs.ActorKey(actorID), ModRev: rev}}, ops)
		if err != nil {
			return false, fmt.Errorf("actors: move actor %s to node %s: %w", actorID, to, err)
		}
		if ok {
			return true, nil
		}
		if attempt >= 50 {
			return false, fmt.Errorf("actors: move actor %s to node %s: the record keeps changing", actorID, to)
		}
		select { // lost a race: read again
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
}

// PlaceInGroup binds an actor created in a placement group that was not placed yet (its
// record names the group, ActorInfo.placement_group, and no node) to its bundle's node,
// with its resources renamed into the bundle's (res), once the group is placed: the
// Manager places it there then (until that, it waits: Manager placeInBundle). It does
// nothing to a record bound to a node already, of another group, or dead, and reports
// whether the record changed.
func (t *Table) PlaceInGroup(ctx context.Context, actorID, group, node string, res []*pb.ResourceQty) (bool, error) {
	for attempt := 0; ; attempt++ {
		info, rev, err := t.Get(ctx, actorID)
		if err != nil {
			return false, err
		}
		if info.PlacementGroup != group || info.AffinityNode != "" || lifecycle.Phase(info.Phase) == lifecycle.Dead {
			return false, nil
		}
		info.AffinityNode, info.Resources = node, res
		if info.Node == "" {
			info.Waiting = "" // what it waited for is done; the Manager says what it waits for next
		}
		ops, err := publishOps(info)
		if err != nil {
			return false, err
		}
		ok, _, err := t.Store.Txn(ctx, []gcs.Cmp{{Key: gcs.ActorKey(actorID), ModRev: rev}}, ops)
		if err != nil {
			return false, fmt.Errorf("actors: place actor %s in its placement group's bundle on node %s: %w", actorID, node, err)
		}
		if ok {
			return true, nil
		}
		if attempt >= 50 {
			return false, fmt.Errorf("actors: place actor %s on node %s: the record keeps changing", actorID, node)
		}
		select { // lost a race: read again
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
}

// StepWith is Step with extra operations committed in the same transaction when the state
// changes (a checkpoint's log truncation).
func (t *Table) StepWith(ctx context.Context, actorID string, ev lifecycle.Event, extra []gcs.Op) (*pb.ActorInfo, []lifecycle.Action, bool, error) {
	info, actions, changed, _, err := t.stepFrom(ctx, actorID, ev, extra, nil, 0)
	return info, actions, changed, err
}

// stepFrom is StepWith starting from a record already read (known, at revision rev: a
// read saved when it has not changed since, a read more when it has; nil: read it first),
// and it also returns the record's revision after a step that changed it (0 otherwise).
func (t *Table) stepFrom(ctx context.Context, actorID string, ev lifecycle.Event, extra []gcs.Op, known *pb.ActorInfo, knownRev int64) (*pb.ActorInfo, []lifecycle.Action, bool, int64, error) {
	for attempt := 0; ; attempt++ {
		var info *pb.ActorInfo
		var rev int64
		var err error
		if attempt == 0 && known != nil {
			info, rev = proto.Clone(known).(*pb.ActorInfo), knownRev
		} else if info, rev, err = t.Get(ctx, actorID); err != nil {
			return nil, nil, false, 0, err
		}
		before := StateOf(info)
		next, actions, err := lifecycle.Step(before, ev)
		if attempt == 0 && known != nil && (err != nil || next == before) {
			continue // decided on the record as it is now, not as it was
		}
		if err != nil {
			return info, nil, false, 0, err
		}
		if next == before {
			return info, actions, false, 0, nil
		}
		setState(info, next)
		noteTransition(info, before, next, time.Now())
		ops, err := publishOps(info)
		if err != nil {
			return nil, nil, false, 0, err
		}
		ok, txnRev, err := t.Store.Txn(ctx, []gcs.Cmp{{Key: gcs.ActorKey(actorID), ModRev: rev}}, append(ops, extra...))
		if err != nil {
			return nil, nil, false, 0, fmt.Errorf("actors: step actor %s (%v): %w", actorID, ev, err)
		}
		if ok {
			return info, actions, true, txnRev, nil
		}
		if attempt >= 50 {
			return nil, nil, false, 0, fmt.Errorf("actors: step actor %s (%v): the record keeps changing", actorID, ev)
		}
		select { // lost a race: read again
		case <-ctx.Done():
			return nil, nil, false, 0, ctx.Err()
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
}
