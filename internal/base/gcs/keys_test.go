package gcs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/gcs"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{gcs.NodeKey("ab12"), "nodes/ab12"},
		{gcs.MemberKey("m1"), "members/m1"},
		{gcs.JobKey("j1"), "jobs/j1"},
		{gcs.FunctionKey("j1", "demo.square"), "functions/j1/demo.square"},
		{gcs.JobFunctionsPrefix("j1"), "functions/j1/"},
		{gcs.ActorKey("a1"), "actors/a1"},
		{gcs.PlacementKey("a1"), "placement/a1"},
		{gcs.LineagePageKey("o/0000000000000001"), "lineage/o/0000000000000001"},
		{gcs.ObjectKey("n1", "ff"), "objects/n1/ff"},
		{gcs.ObjectsOf("n1"), "objects/n1/"},
		{gcs.LineageOf("n1"), "lineage/n1/"},
		{gcs.ObjectPageKey("p"), "objpages/p"},
		{gcs.ActorLogKey("a1", 42), "actorlog/a1/00000000000000000042"},
		{gcs.ActorNameKey("ns", "ps"), "actornames/ns/ps"},
		{gcs.CheckpointKey("a1", 7, 3), "checkpoints/a1/00000000000000000007/000003"},
		{gcs.CheckpointPrefix("a1"), "checkpoints/a1/"},
		{gcs.ActorLogActorPrefix("a1"), "actorlog/a1/"},
		{gcs.ActorReplayKey("a1"), "actorlog/a1/replay"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// Key order is sequence order.
	if !(gcs.ActorLogKey("a", 9) < gcs.ActorLogKey("a", 10)) {
		t.Error("actor log keys do not sort by log index")
	}
	a, index, err := gcs.ParseActorLogKey(gcs.ActorLogKey("a1", 1<<63))
	if err != nil || a != "a1" || index != 1<<63 {
		t.Errorf("ParseActorLogKey = %q %d %v", a, index, err)
	}
	for _, bad := range []string{"actorlog/a/12", "actorlog/a/replay", "actors/a", "actorlog/a/0000000000000000000x", "actorlog//00000000000000000001", "actorlog/a/c/00000000000000000001"} {
		if _, _, err := gcs.ParseActorLogKey(bad); err == nil {
			t.Errorf("ParseActorLogKey(%q) succeeded", bad)
		}
	}
	if id, ok := gcs.TrimKey(gcs.NodesPrefix, gcs.NodeKey("n7")); !ok || id != "n7" {
		t.Errorf("TrimKey = %q %v", id, ok)
	}
	// No table prefix is a prefix of another: a List of one table never returns another's.
	prefixes := []string{gcs.NodesPrefix, gcs.MembersPrefix, gcs.JobsPrefix, gcs.FunctionsPrefix, gcs.ActorsPrefix,
		gcs.PlacementPrefix, gcs.LineagePrefix, gcs.ObjectsPrefix, gcs.ObjectPagesPrefix, gcs.ActorLogPrefix, gcs.ActorNamesPrefix, gcs.CheckpointsPrefix}
	for i, p := range prefixes {
		for j, q := range prefixes {
			if i != j && strings.HasPrefix(q, p) {
				t.Errorf("table prefix %q is a prefix of %q", p, q)
			}
		}
	}
}

func TestCheckTxn(t *testing.T) {
	put := func(k string) gcs.Op { return gcs.Op{Kind: gcs.OpPut, Key: k} }
	for _, tc := range []struct {
		name string
		cmps []gcs.Cmp
		ops  []gcs.Op
		want error
	}{
		{"empty", nil, nil, nil},
		{"fine", []gcs.Cmp{{Key: "a"}}, []gcs.Op{put("a"), put("b"), {Kind: gcs.OpDelete, Key: "c"}}, nil},
		{"empty prefix delete", nil, []gcs.Op{{Kind: gcs.OpDeletePrefix}}, nil},
		{"empty put key", nil, []gcs.Op{put("")}, gcs.ErrEmptyKey},
		{"empty cmp key", []gcs.Cmp{{}}, nil, gcs.ErrEmptyKey},
		{"dup put", nil, []gcs.Op{put("a"), put("a")}, gcs.ErrDuplicateKey},
		{"put deleted", nil, []gcs.Op{put("a/b"), {Kind: gcs.OpDeletePrefix, Key: "a/"}}, gcs.ErrDuplicateKey},
		{"too many", nil, make([]gcs.Op, gcs.MaxTxnOps+1), gcs.ErrTooLarge},
		{"too big", nil, []gcs.Op{{Kind: gcs.OpPut, Key: "k", Value: make([]byte, gcs.MaxRequestBytes)}}, gcs.ErrTooLarge},
	} {
		err := gcs.CheckTxn(tc.cmps, tc.ops)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: CheckTxn = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := gcs.CheckTxn(nil, []gcs.Op{{Key: "k"}}); err == nil {
		t.Error("op without a kind accepted")
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a/": "a0", "a\xff": "b", "\xff\xff": "", "": ""} {
		if got := gcs.PrefixEnd(in); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsPermanent(t *testing.T) {
	if !gcs.IsPermanent(errors.Join(errors.New("x"), gcs.ErrTooLarge)) || gcs.IsPermanent(errors.New("unavailable")) || gcs.IsPermanent(nil) {
		t.Error("IsPermanent")
	}
}
