package ids

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
)

// TaskIDLen and ObjectIDLen are the sizes of the binary forms.
const (
	TaskIDLen   = 16
	ObjectIDLen = TaskIDLen + 4
	ActorIDLen  = 16
)

// PutIndexBit marks an object index as created by Put rather than returned by a task.
const PutIndexBit uint32 = 1 << 31

// TaskID identifies one task (or a driver's root task).
type TaskID [TaskIDLen]byte

// ObjectID identifies one immutable object.
type ObjectID [ObjectIDLen]byte

// ActorID identifies one actor instance across its restarts.
type ActorID [ActorIDLen]byte

// NodeID names a node (one protoactor cluster member). It is a short hex string.
type NodeID string

// JobID names a job (one driver program run). It is a short hex string.
type JobID string

// NewRootTaskID returns a random task ID for a driver or another root of the task tree.
func NewRootTaskID() TaskID {
	var t TaskID
	if _, err := rand.Read(t[:]); err != nil {
		panic(fmt.Sprintf("ids: no randomness: %v", err))
	}
	return t
}

// NewNodeID returns a random node ID.
func NewNodeID() NodeID { return NodeID(randomHex(8)) }

// NewJobID returns a random job ID.
func NewJobID() JobID { return JobID(randomHex(4)) }

// NewActorID returns a random actor ID.
func NewActorID() ActorID {
	var a ActorID
	if _, err := rand.Read(a[:]); err != nil {
		panic(fmt.Sprintf("ids: no randomness: %v", err))
	}
	return a
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("ids: no randomness: %v", err))
	}
	return hex.EncodeToString(b)
}

// ChildTaskID derives the ID of the counter-th task submitted by parent (counter from 1).
// The same parent and counter always give the same ID, in every process. Its first byte
// is the parent's second (Family): the children of one task share it, so that an owner can
// keep them together (one partition of its state per submitter); the other bytes are
// AES-128, under a fixed key, of the parent with the counter XORed into its last 8 bytes: a
// permutation, so distinct inputs never give the same block, and a pseudo-random one, so
// IDs of unrelated tasks collide no more than random 120-bit values do. (It was SHA-256:
// 86 ns per task on this VM against 18; IDs need no secrecy, only uniqueness.)
func ChildTaskID(parent TaskID, counter uint64) TaskID {
	t := permute(childBlock, parent, counter)
	t[0] = parent[1]
	return t
}

// permute is block's encryption of t with x XORed into its last 8 bytes. Its buffers are
// pooled: passed to an interface method (cipher.Block), locals would escape, two
// allocations per task.
func permute(block cipher.Block, t TaskID, x uint64) TaskID {
	buf := blockBufs.Get().(*[2]TaskID)
	in, out := &buf[0], &buf[1]
	*in = t
	binary.BigEndian.PutUint64(in[8:], binary.BigEndian.Uint64(t[8:])^x)
	block.Encrypt(out[:], in[:])
	r := *out
	blockBufs.Put(buf)
	return r
}

var blockBufs = sync.Pool{New: func() any { return new([2]TaskID) }}

// childBlock and attemptBlock are the fixed-key permutations of ChildTaskID and
// AttemptTaskID (different keys: the two derivations never meet).
var childBlock, attemptBlock = mustAES("ray-go child IDs"), mustAES("ray-go attempts!")

func mustAES(key string) cipher.Block {
	b, err := aes.NewCipher([]byte(key))
	if err != nil {
		panic(fmt.Sprintf("ids: %v", err))
	}
	return b
}

// Family is what the children of one parent share (see ChildTaskID): an owner's
// partition of the tasks it submits.
func (t TaskID) Family() uint8 { return t[0] }

// AttemptTaskID is what the IDs of the tasks and objects an attempt of task t creates
// derive from: t itself for the first attempt (attempt 0), else an ID drawn from t and the
// attempt (as ChildTaskID, under another key). A retried task thus creates new IDs: a
// child of the first attempt still queued or running somewhere (its owner, the first
// attempt's process, may be dead) is not taken for the same task as the retry's child,
// which schedulers would drop as a duplicate.
func AttemptTaskID(t TaskID, attempt int32) TaskID {
	if attempt <= 0 {
		return t
	}
	return permute(attemptBlock, t, uint64(uint32(attempt)))
}

// ReturnID is the ID of the index-th return value (from 1) of task t.
func ReturnID(t TaskID, index uint32) ObjectID {
	var o ObjectID
	copy(o[:], t[:])
	binary.BigEndian.PutUint32(o[TaskIDLen:], index)
	return o
}

// PutID is the ID of the counter-th object (from 1) put by task t.
func PutID(t TaskID, counter uint32) ObjectID {
	return ReturnID(t, PutIndexBit|counter)
}

// ActorHandleIndex is the index of an actor's handle object (ActorHandleID): the last
// Put index, which no task's puts reach.
const ActorHandleIndex uint32 = PutIndexBit | (PutIndexBit - 1)

// ActorHandleID is the ID of the handle object of actor a: the small object its owner
// keeps while any handle to a non-detached actor lives (borrowers count it like any
// object), whose release ends the actor.
func ActorHandleID(a ActorID) ObjectID { return ReturnID(TaskID(a), ActorHandleIndex) }

// HandleOf reports whether o is an actor's handle object (ActorHandleID), and whose.
func (o ObjectID) HandleOf() (ActorID, bool) {
	if o.Index() != ActorHandleIndex {
		return ActorID{}, false
	}
	return ActorID(o.Task()), true
}

// Task is the task that created o (by returning it or putting it).
func (o ObjectID) Task() TaskID {
	var t TaskID
	copy(t[:], o[:TaskIDLen])
	return t
}

// Hash spreads IDs over partitions (the shards of the owner's tables): bytes 4 to 8 of a
// task ID are AES output or random, so they are uniform (byte 0 is the Family).
func (t TaskID) Hash() uint32 { return binary.LittleEndian.Uint32(t[4:8]) }

// Hash spreads object IDs over partitions: the task's hash mixed with the index, so that
// the objects one task puts do not all fall in one partition.
func (o ObjectID) Hash() uint32 {
	return binary.LittleEndian.Uint32(o[4:8]) ^ binary.BigEndian.Uint32(o[TaskIDLen:])*0x9e3779b9
}

// Index is o's index within its task (see PutIndexBit).
func (o ObjectID) Index() uint32 { return binary.BigEndian.Uint32(o[TaskIDLen:]) }

// IsPut reports whether o was created by Put.
func (o ObjectID) IsPut() bool { return o.Index()&PutIndexBit != 0 }

// IsZero reports whether o is the zero ID.
func (o ObjectID) IsZero() bool { return o == ObjectID{} }

// IsZero reports whether t is the zero ID.
func (t TaskID) IsZero() bool { return t == TaskID{} }

// IsZero reports whether a is the zero ID.
func (a ActorID) IsZero() bool { return a == ActorID{} }

func (t TaskID) String() string   { return hex.EncodeToString(t[:]) }
func (o ObjectID) String() string { return hex.EncodeToString(o[:]) }
func (a ActorID) String() string  { return hex.EncodeToString(a[:]) }

// TaskIDFromBytes parses the binary form of a TaskID.
func TaskIDFromBytes(b []byte) (TaskID, error) {
	var t TaskID
	if len(b) != TaskIDLen {
		return t, fmt.Errorf("ids: task ID must be %d bytes, got %d", TaskIDLen, len(b))
	}
	copy(t[:], b)
	return t, nil
}

// ObjectIDFromBytes parses the binary form of an ObjectID.
func ObjectIDFromBytes(b []byte) (ObjectID, error) {
	var o ObjectID
	if len(b) != ObjectIDLen {
		return o, fmt.Errorf("ids: object ID must be %d bytes, got %d", ObjectIDLen, len(b))
	}
	copy(o[:], b)
	return o, nil
}

// ActorIDFromBytes parses the binary form of an ActorID.
func ActorIDFromBytes(b []byte) (ActorID, error) {
	var a ActorID
	if len(b) != ActorIDLen {
		return a, fmt.Errorf("ids: actor ID must be %d bytes, got %d", ActorIDLen, len(b))
	}
	copy(a[:], b)
	return a, nil
}

// ParseObjectID parses the hex form printed by ObjectID.String.
func ParseObjectID(s string) (ObjectID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ObjectID{}, fmt.Errorf("ids: object ID %q is not hex: %w", s, err)
	}
	return ObjectIDFromBytes(b)
}

// ParseTaskID parses the hex form printed by TaskID.String.
func ParseTaskID(s string) (TaskID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return TaskID{}, fmt.Errorf("ids: task ID %q is not hex: %w", s, err)
	}
	return TaskIDFromBytes(b)
}

// ParseActorID parses the hex form printed by ActorID.String.
func ParseActorID(s string) (ActorID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ActorID{}, fmt.Errorf("ids: actor ID %q is not hex: %w", s, err)
	}
	return ActorIDFromBytes(b)
}
