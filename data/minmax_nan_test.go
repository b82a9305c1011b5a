package data

import (
	"errors"
	"math"
	"testing"
)

// TestMinMaxAllNaN: Min and Max skip NaN, but a group (or a dataset) whose values are all NaN
// gets NaN, not null, as Arrow's min_max and hash_min_max (since GH-46063; before, they gave
// +Inf and -Inf, never null) and NumPy's nanmin; a group of only nulls stays null. The rows
// are cut into blocks so that a group's NaN and its numbers meet only in the merge.
func TestMinMaxAllNaN(t *testing.T) {
	ctx := timeout(t)
	nan := math.NaN()
	rows := []Row{
		{"k": "nan", "v": nan}, {"k": "mixed", "v": nan}, {"k": "nulls", "v": nil}, {"k": "nan+null", "v": nil},
		{"k": "nan", "v": nan}, {"k": "mixed", "v": 2.0}, {"k": "nulls", "v": nil}, {"k": "nan+null", "v": nan},
		{"k": "nan", "v": nan}, {"k": "mixed", "v": -1.0}, {"k": "nulls", "v": nil}, {"k": "nan+null", "v": nil},
	}
	ds := FromItems(rows, Parallelism(3))
	got, err := ds.GroupBy("k").Aggregate(Min("v"), Max("v")).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Row{}
	for _, r := range got {
		byKey[r["k"].(string)] = r
	}
	isNaN := func(v any) bool { f, ok := v.(float64); return ok && math.IsNaN(f) }
	for _, k := range []string{"nan", "nan+null"} {
		if r := byKey[k]; !isNaN(r["min(v)"]) || !isNaN(r["max(v)"]) {
			t.Errorf("group %q (values all NaN): %v, want min and max NaN", k, r)
		}
	}
	if r := byKey["mixed"]; r["min(v)"] != -1.0 || r["max(v)"] != 2.0 {
		t.Errorf("group mixed: %v, want min -1 and max 2 (NaN skipped)", r)
	}
	if r := byKey["nulls"]; r["min(v)"] != nil || r["max(v)"] != nil {
		t.Errorf("group nulls: %v, want null min and max", r)
	}
	if len(got) != 4 {
		t.Errorf("%d groups, want 4: %v", len(got), got)
	}

	// The dataset aggregates: NaN only when every value is NaN.
	onlyNaN := FromItems([]Row{{"v": nan}, {"v": nil}, {"v": nan}, {"v": nan}}, Parallelism(2))
	for name, f := range map[string]func(*Dataset) (any, error){
		"Min": func(d *Dataset) (any, error) { return d.Min(ctx, "v") },
		"Max": func(d *Dataset) (any, error) { return d.Max(ctx, "v") },
	} {
		if v, err := f(onlyNaN); err != nil || !isNaN(v) {
			t.Errorf("%s of NaN and nulls: %v %v, want NaN", name, v, err)
		}
		mixed := FromItems([]Row{{"v": nan}, {"v": 3.0}, {"v": nan}, {"v": -2.0}}, Parallelism(4))
		want := map[string]any{"Min": -2.0, "Max": 3.0}[name]
		if v, err := f(mixed); err != nil || v != want {
			t.Errorf("%s of NaN and numbers: %v %v, want %v", name, v, err, want)
		}
		nulls := FromItems([]Row{{"v": nil}, {"v": nil}}, Parallelism(2))
		if v, err := f(nulls); !errors.Is(err, ErrEmpty) {
			t.Errorf("%s of only nulls: %v %v, want ErrEmpty", name, v, err)
		}
	}
}
