// Package ids defines the identifiers of ray-go: jobs, nodes, tasks, objects and actors.
//
// Object IDs are derived from task IDs (DESIGN §4) so that re-executing a task during
// lineage reconstruction recreates exactly the same object IDs:
//
//	TaskID   = AES-128_K(parent TaskID XOR submission counter), byte 0 = the parent's byte 1
//	ObjectID = TaskID || uint32 index (big endian)
//
// A task's return values have indexes 1..n; objects created by Put inside a task (or a
// driver) have index PutIndexBit|counter, counted per putting task. A driver's root task ID
// is random, so two drivers never collide.
//
// This package is a leaf: it imports only the standard library.
package ids
