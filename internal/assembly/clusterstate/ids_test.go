package clusterstate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestMatchID: the whole ID, or at least MinPrefix of its first characters naming one ID;
// a prefix of several names them.
func TestMatchID(t *testing.T) {
	ids := []string{"fa7d13aa", "fa7d13bb", "5060c3cc", "abcdef"}
	for _, c := range []struct{ id, want, err string }{
		{"5060c3cc", "5060c3cc", ""},
		{"5060c3", "5060c3cc", ""},
		{"5060C3", "5060c3cc", ""},
		{"5060c", "", ""}, // too short to be a prefix
		{"abcdef", "abcdef", ""},
		{"fa7d13", "", `"fa7d13" is the start of 2 job IDs (fa7d13aa, fa7d13bb)`},
		{"fa7d13a", "fa7d13aa", ""},
		{"000000", "", ""},
	} {
		got, err := MatchID("job", ids, c.id)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("MatchID(%q) = %q, %v; want %q, %q", c.id, got, err, c.want, c.err)
		}
	}
}

// TestResolveJobAndSubmission: a job by its ID or a prefix; a submission by its ID, its
// job's, or a prefix of either.
func TestResolveJobAndSubmission(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	put(gcs.JobKey("fa7d13e1"), &pb.JobInfo{JobId: "fa7d13e1", SubmissionId: "5060c3d2a1b2c3d4"})
	put(gcs.JobKey("fa7d14e1"), &pb.JobInfo{JobId: "fa7d14e1"})
	put(gcs.SubmissionKey("5060c3d2a1b2c3d4"), &pb.Submission{SubmissionId: "5060c3d2a1b2c3d4", JobId: "fa7d13e1", Argv: []string{"/bin/true"}})
	put(gcs.SubmissionKey("5060c4d2a1b2c3d4"), &pb.Submission{SubmissionId: "5060c4d2a1b2c3d4", Argv: []string{"/bin/true"}})

	if j, err := ResolveJob(ctx, s, "fa7d13"); j != "fa7d13e1" || err != nil {
		t.Fatalf("ResolveJob(fa7d13) = %q, %v", j, err)
	}
	var amb *AmbiguousError
	if j, err := ResolveJob(ctx, s, "fa7d1e"); j != "" || err != nil {
		t.Fatalf("ResolveJob(fa7d1e) = %q, %v; want none", j, err)
	}
	if _, err := ResolveJob(ctx, s, "fa7d1"); err != nil {
		t.Fatalf("5 characters: %v", err)
	}
	put(gcs.JobKey("fa7d13e2"), &pb.JobInfo{JobId: "fa7d13e2"})
	if _, err := ResolveJob(ctx, s, "fa7d13"); !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Fatalf("an ambiguous prefix: %v", err)
	}
	for id, want := range map[string]string{
		"5060c3d2a1b2c3d4": "5060c3d2a1b2c3d4",
		"5060c3":           "5060c3d2a1b2c3d4",
		"fa7d13e1":         "5060c3d2a1b2c3d4", // its job's ID
		"fa7d13e":          "5060c3d2a1b2c3d4",
		"fa7d14":           "", // a job without a submission
	} {
		if got, err := ResolveSubmission(ctx, s, id); got != want || err != nil {
			t.Errorf("ResolveSubmission(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	if _, err := ResolveSubmission(ctx, s, "5060c"); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveSubmission(ctx, s, "5060c4d2"); got != "5060c4d2a1b2c3d4" || err != nil {
		t.Fatalf("%q %v", got, err)
	}
}
