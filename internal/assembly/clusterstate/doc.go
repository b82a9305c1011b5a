// Package clusterstate reads the cluster's nodes, jobs and actors as the GCS holds them:
// what `rayctl status`, `rayctl list nodes|jobs|actors` and the web dashboard
// (internal/assembly/dashboard) show. It only reads: every call lists a few key prefixes
// (each bounded by 10 s) and decodes the records; a record that does not decode is left
// out. Tasks and objects are not in the GCS: package internal/assembly/taskstate asks
// their owners.
package clusterstate
