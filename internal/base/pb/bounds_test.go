package pb

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestSplit(t *testing.T) {
	size := func(n int) int { return n }
	cases := []struct {
		items []int
		max   int
		want  [][]int
	}{
		{nil, 10, nil},
		{[]int{3, 3, 3}, 10, [][]int{{3, 3, 3}}},
		{[]int{6, 6, 6}, 10, [][]int{{6}, {6}, {6}}},
		{[]int{4, 6, 1, 20, 2, 2}, 10, [][]int{{4, 6}, {1}, {20}, {2, 2}}},
		{[]int{20}, 10, [][]int{{20}}},
	}
	for _, c := range cases {
		var got [][]int
		Split(c.items, size, c.max, func(run []int) { got = append(got, append([]int(nil), run...)) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%v, %d) = %v, want %v", c.items, c.max, got, c.want)
		}
	}
	var got [][]int
	SplitCount([]int{1, 2, 3, 4, 5}, 2, func(run []int) { got = append(got, run) })
	if want := [][]int{{1, 2}, {3, 4}, {5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("SplitCount = %v, want %v", got, want)
	}
}

func TestSpecBytesCountsArguments(t *testing.T) {
	s := &TaskSpec{Function: "f", Args: []*Arg{{Data: make([]byte, 5000)}, {ObjectId: make([]byte, 28), IsRef: true}}}
	got := SpecBytes(s)
	if got < 5000+28 || got > 5000+28+specOverhead+64 {
		t.Fatalf("SpecBytes = %d", got)
	}
	real := len(mustMarshal(t, s))
	if got < real {
		t.Fatalf("SpecBytes = %d under the encoded size %d", got, real)
	}
}

func mustMarshal(t *testing.T, s *TaskSpec) []byte {
	t.Helper()
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
