package clusterstate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/gcs"
)

// MinPrefix is the fewest characters of an ID that name it, as `rayctl get` takes them.
const MinPrefix = 6

// AmbiguousError is a prefix that starts several IDs.
type AmbiguousError struct {
	Kind       string   // "job", "submission", "actor", ...
	Prefix     string   // as given
	Candidates []string // the IDs it starts, sorted
}

func (e *AmbiguousError) Error() string {
	c, more := e.Candidates, ""
	if len(c) > 10 {
		c, more = c[:10], fmt.Sprintf(" and %d more", len(c)-10)
	}
	return fmt.Sprintf("%q is the start of %d %s IDs (%s%s): give more of it", e.Prefix, len(e.Candidates), e.Kind,
		strings.Join(c, ", "), more)
}

// MatchID finds id among ids: an ID equal to it, else the only one that starts with it when
// it has at least MinPrefix characters (case does not matter: IDs are lower-case hex). No
// match is "" and no error; several are an *AmbiguousError naming them.
func MatchID(kind string, ids []string, id string) (string, error) {
	want := strings.ToLower(id)
	var found []string
	for _, x := range ids {
		if x == id || x == want {
			return x, nil
		}
		if len(want) >= MinPrefix && strings.HasPrefix(x, want) {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	sort.Strings(found)
	found = compactSorted(found)
	if len(found) == 1 {
		return found[0], nil
	}
	return "", &AmbiguousError{Kind: kind, Prefix: id, Candidates: found}
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// ResolveJob finds the job whose ID is id or starts with it (MatchID over the job table):
// "" when there is none.
func ResolveJob(ctx context.Context, s gcs.Store, id string) (string, error) {
	kvs, err := List(ctx, s, gcs.JobsPrefix)
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		if j, ok := gcs.TrimKey(gcs.JobsPrefix, kv.Key); ok {
			ids = append(ids, j)
		}
	}
	return MatchID("job", ids, id)
}

// ResolveSubmission finds the submission (rayctl job submit) whose ID is id or starts with
// it, else the one whose job's ID is or starts with it: "" when there is none.
func ResolveSubmission(ctx context.Context, s gcs.Store, id string) (string, error) {
	kvs, err := List(ctx, s, gcs.SubmissionsPrefix)
	if err != nil {
		return "", err
	}
	var ids, jobs []string
	byJob := map[string]string{}
	for _, kv := range kvs {
		sid, ok := gcs.TrimKey(gcs.SubmissionsPrefix, kv.Key)
		if !ok || strings.Contains(sid, "/") {
			continue
		}
		ids = append(ids, sid)
		if sub, err := agent.DecodeSubmission(sid, kv.Value); err == nil && sub.GetJobId() != "" {
			jobs = append(jobs, sub.GetJobId())
			byJob[sub.GetJobId()] = sid
		}
	}
	if sid, err := MatchID("submission", ids, id); sid != "" || err != nil {
		return sid, err
	}
	j, err := MatchID("job", jobs, id)
	if j == "" || err != nil {
		return "", err
	}
	return byJob[j], nil
}
