// Package lineage records task specs in the GCS lineage table, so that an object whose
// bytes are lost can be recreated by re-running the tasks that produced it (the Ray
// paper's lineage-based fault tolerance, DESIGN §5).
//
// Every submitted task's spec is recorded before the task can run, with its reference
// arguments as object IDs; the owner's reference table (package objects) says when a
// record is no longer needed, and the Recorder deletes it. Records go out through the GCS
// group-commit writer packed many to an etcd key (gcs.Packer), so recording costs an
// append to a buffer on the submission path, not an etcd round trip; a record created and
// dropped within one flush window never reaches etcd at all.
//
// Keys: gcs.LineagePrefix pages; each record's ID is the task ID's 16 bytes.
//
// Reconstruction planning (walking the lineage from a lost object, recreating missing
// arguments first) arrives with the fault-tolerance work; the records written here are
// what it reads, through gcs.ReadAll on the lineage prefix.
package lineage
