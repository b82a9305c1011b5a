package cli

import (
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
)

// TestMatchIDFilters: an ID filter's value that starts one known ID becomes that ID; one
// that starts several is refused naming them; an unknown job, or a short prefix of no
// node, is refused saying where the IDs are; a whole node ID of a node gone, a value that
// is no ID (location=inline) and a != filter's prefix are handled as such.
func TestMatchIDFilters(t *testing.T) {
	known := map[idSet][]string{
		groupIDs: {"aaaa000011112222"},
		jobIDs:   {"0a1b2c3d", "0a1b2c99", "ffee0011"},
		nodeIDs:  {"1111222233334444", "1111222255556666", "abcdef0123456789"},
	}
	resolve := func(kind string, fs ...string) ([]filter, error) {
		t.Helper()
		parsed, err := parseFilters(fs)
		if err != nil {
			t.Fatal(err)
		}
		return matchIDFilters(kind, parsed, known)
	}
	got, err := resolve("tasks", "job_id=ffee00", "node=abcdef01", "state=FAILED")
	if err != nil || got[0].value != "ffee0011" || got[1].value != "abcdef0123456789" || got[2].value != "FAILED" {
		t.Fatalf("prefixes: %+v, %v; want the whole IDs", got, err)
	}
	if got, err := resolve("actors", "job_id!=FFEE00"); err != nil || got[0].value != "ffee0011" || !got[0].neg {
		t.Fatalf("a != filter in upper case: %+v, %v", got, err)
	}
	if _, err := resolve("tasks", "job_id=0a1b2c"); err == nil || !strings.Contains(err.Error(), "0a1b2c3d, 0a1b2c99") {
		t.Fatalf("an ambiguous job prefix: %v, want an error naming both jobs", err)
	}
	if _, err := resolve("objects", "job_id=123456"); err == nil || !strings.Contains(err.Error(), `no job "123456"`) ||
		!strings.Contains(err.Error(), "rayctl list jobs") {
		t.Fatalf("an unknown job: %v, want an error saying where the jobs are", err)
	}
	if _, err := resolve("jobs", "job_id!=123456"); err == nil || !strings.Contains(err.Error(), "filter job_id!=123456: no job") {
		t.Fatalf("an unknown job after !=: %v, want the filter as given in the error", err)
	}
	if _, err := resolve("nodes", "node_id=11112222"); err == nil || !strings.Contains(err.Error(), "1111222233334444, 1111222255556666") {
		t.Fatalf("an ambiguous node prefix: %v", err)
	}
	if _, err := resolve("actors", "node=999999"); err == nil || !strings.Contains(err.Error(), "rayctl list nodes") {
		t.Fatalf("an unknown node prefix: %v, want an error saying where the nodes are", err)
	}
	if got, err := resolve("tasks", "node=9999999999999999"); err != nil || got[0].value != "9999999999999999" {
		t.Fatalf("the whole ID of a node gone: %+v, %v; want it kept", got, err)
	}
	if got, err := resolve("placement-groups", "placement_group_id=0123456789abcdef"); err != nil || got[0].value != "0123456789abcdef" {
		t.Fatalf("the whole ID of a placement group gone: %+v, %v; want it kept", got, err)
	}
	if _, err := resolve("placement-groups", "placement_group_id=01234567"); err == nil || !strings.Contains(err.Error(), "rayctl list placement-groups") {
		t.Fatalf("an unknown placement group prefix: %v", err)
	}
	if got, err := resolve("objects", "location=inline"); err != nil || got[0].value != "inline" {
		t.Fatalf("location=inline: %+v, %v", got, err)
	}
	// A field that holds no ID is compared as it is.
	if got, err := resolve("tasks", "name=abcdef"); err != nil || got[0].value != "abcdef" {
		t.Fatalf("name=abcdef: %+v, %v", got, err)
	}
}

// TestCheckMatchedIDs: what processes matched to a task or object ID prefix is one ID, or
// an error: several (named), or none of a prefix.
func TestCheckMatchedIDs(t *testing.T) {
	if err := checkMatchedIDs(taskIDs, "task_id", "abcdef", []string{"abcdef01", "abcdef01"}, 8); err != nil {
		t.Fatalf("one task's attempts: %v", err)
	}
	if err := checkMatchedIDs(taskIDs, "task_id", "abcdef", []string{"abcdef01", "abcdef02"}, 8); err == nil ||
		!strings.Contains(err.Error(), "abcdef01, abcdef02") {
		t.Fatalf("two tasks: %v, want an error naming them", err)
	}
	if err := checkMatchedIDs(objectIDs, "object_id", "abcdef", nil, 8); err == nil || !strings.Contains(err.Error(), "rayctl list objects") {
		t.Fatalf("no object: %v", err)
	}
	if err := checkMatchedIDs(objectIDs, "object_id", "abcdef01", nil, 8); err != nil {
		t.Fatalf("a whole ID of nothing: %v, want an empty list", err)
	}
	// Filters rayctl applies itself (objects' task_id) match among the records' IDs.
	recs := []record{{{"object_id", "o1"}, {"task_id", "aaaaaa11"}}, {{"object_id", "o2"}, {"task_id", "bbbbbb22"}}}
	got, err := matchRecordIDs("objects", []filter{{key: "task_id", value: "bbbbbb"}}, recs)
	if err != nil || got[0].value != "bbbbbb22" {
		t.Fatalf("objects' task_id prefix: %+v, %v", got, err)
	}
	if kept, err := filterRecords(recs, got); err != nil || len(kept) != 1 {
		t.Fatalf("filtered: %v, %v", kept, err)
	}
}

// TestObjectRows: `rayctl get object` of an object that other processes borrow (its
// owner's row and a row per borrower) shows that one object, owner first; rows of two
// objects are refused naming both, and none says so.
func TestObjectRows(t *testing.T) {
	const id = "343cc044164ebc73b0797250f605a67080000001"
	rows := []core.ObjectInfo{
		{ObjectID: id, RefType: core.RefBorrowed, Holder: "bbbb"},
		{ObjectID: id, RefType: core.RefLocal, Owner: "e282"},
		{ObjectID: id, RefType: core.RefBorrowed, Holder: "aaaa"},
	}
	for _, give := range []string{id, id[:8]} {
		recs, err := objectRows(give, rows)
		if err != nil {
			t.Fatalf("get object %s of an object borrowed twice: %v, want its rows", give, err)
		}
		var got []string
		for _, r := range recs {
			ref, _ := r.get("reference_type")
			holder, _ := r.get("holder_node")
			got = append(got, scalar(ref)+"/"+scalar(holder))
		}
		if want := "LOCAL_REFERENCE/, BORROWED/aaaa, BORROWED/bbbb"; strings.Join(got, ", ") != want {
			t.Fatalf("get object %s: rows %v, want %s (the owner's first)", give, got, want)
		}
	}
	other := "343cc044ffffffffffffffffffffffffffffffff"
	if _, err := objectRows("343cc044", append(rows, core.ObjectInfo{ObjectID: other, RefType: core.RefLocal})); err == nil ||
		!strings.Contains(err.Error(), id+", "+other) {
		t.Fatalf("a prefix of two objects: %v, want an error naming both", err)
	}
	if _, err := objectRows(id, nil); err == nil || !strings.Contains(err.Error(), "no object") {
		t.Fatalf("no rows: %v", err)
	}
}
