// Package clusterstate reads the cluster's nodes, jobs, actors and placement groups as the
// GCS holds them, and what waits for resources (Demands: the placement groups not placed,
// and the tasks and actors the nodes' load reports say wait): what `rayctl status`,
// `rayctl list nodes|jobs|actors|placement-groups` and the web dashboard
// (internal/assembly/dashboard) show. It only reads: every call lists a few key prefixes
// (each bounded by 10 s) and decodes the records; a record that does not decode is left
// out. Tasks and objects are not in the GCS: package internal/assembly/taskstate asks
// their owners.
package clusterstate
