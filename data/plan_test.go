package data

import (
	"strings"
	"testing"
)

// physical is the physical plan line of Explain.
func physical(d *Dataset) string {
	ex := d.Explain()
	i := strings.Index(ex, "Physical plan: ")
	if i < 0 {
		return ex
	}
	return ex[i+len("Physical plan: "):]
}

func logical(d *Dataset) string {
	ex := d.Explain()
	line, _, _ := strings.Cut(strings.TrimPrefix(ex, "Logical plan:  "), "\n")
	return line
}

func parquetSource() *Dataset {
	return newDataset(&lnode{Kind: kRead, Source: &sourceSpec{Kind: "files", Format: 1, Paths: []string{"/x/a.parquet"}}}, nil)
}

// TestFusionRules checks Ray's operator fusion rules on plans (no cluster needed).
func TestFusionRules(t *testing.T) {
	pool := ActorPool(1, 2)
	cases := []struct {
		name     string
		ds       *Dataset
		logical  string
		physical string
	}{
		{"read fuses with maps", parquetSource().MapBatches(double).Filter(isEven),
			"Read[ReadParquet] -> MapBatches[test.double] -> Filter[test.even]",
			"ReadParquet->MapBatches(test.double)->Filter(test.even)"},
		{"all map-likes fuse", Range(10).Map(plus100).FlatMap(twice).AddColumn("sq", squareCol).SelectColumns("id", "sq").DropColumns("sq"),
			"Read[ReadRange] -> Map[test.plus100] -> FlatMap[test.twice] -> AddColumn[sq=test.square] -> SelectColumns[id, sq] -> DropColumns[sq]",
			"ReadRange->Map(test.plus100)->FlatMap(test.twice)->AddColumn(sq=test.square)->SelectColumns(id, sq)->DropColumns(sq)"},
		{"different resources break fusion", Range(10).Map(plus100).Map(plus100, NumCPUs(2)).Filter(isEven, NumCPUs(2)),
			"", "ReadRange->Map(test.plus100) -> Map(test.plus100)->Filter(test.even)"},
		{"default CPUs equal NumCPUs(1)", Range(10).Map(plus100, NumCPUs(1)), "", "ReadRange->Map(test.plus100)"},
		{"custom resources break fusion", Range(10).Map(plus100).Map(plus100, Resources(map[string]float64{"accel": 1})),
			"", "ReadRange->Map(test.plus100) -> Map(test.plus100)"},
		{"actor pool breaks fusion both ways", Range(10).MapBatches(double).MapBatches(tagByActor, pool).Filter(isEven),
			"", "ReadRange->MapBatches(test.double) -> MapBatches(test.tagByActor)[ActorPool(min=1, max=2)] -> Filter(test.even)"},
		{"same actor pool fuses", Range(10).MapBatches(tagByActor, pool).MapBatches(double, pool),
			"", "ReadRange -> MapBatches(test.tagByActor)->MapBatches(test.double)[ActorPool(min=1, max=2)]"},
		{"different pools do not fuse", Range(10).MapBatches(tagByActor, pool).MapBatches(double, ActorPool(1, 3)),
			"", "ReadRange -> MapBatches(test.tagByActor)[ActorPool(min=1, max=2)] -> MapBatches(test.double)[ActorPool(min=1, max=3)]"},
		{"limit breaks fusion", Range(10).Map(plus100).Limit(5).Map(plus100),
			"Read[ReadRange] -> Map[test.plus100] -> Limit[5] -> Map[test.plus100]",
			"ReadRange->Map(test.plus100) -> Limit[5] -> Map(test.plus100)"},
		{"union breaks fusion", Range(3).Map(plus100).Union(Range(2)).Map(plus100),
			"Union[Read[ReadRange] -> Map[test.plus100], Read[ReadRange]] -> Map[test.plus100]",
			"Union(ReadRange->Map(test.plus100), ReadRange) -> Map(test.plus100)"},
		{"in-memory sources fuse like reads", FromItems([]int{1, 2}).Map(plus100), "", "FromItems->Map(test.plus100)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.logical != "" {
				if got := logical(c.ds); got != c.logical {
					t.Errorf("logical plan\n got %s\nwant %s", got, c.logical)
				}
			}
			if got := physical(c.ds); got != c.physical {
				t.Errorf("physical plan\n got %s\nwant %s", got, c.physical)
			}
		})
	}
}

// TestPlanErrors: bad arguments are reported by the consuming call, naming the problem.
func TestPlanErrors(t *testing.T) {
	cases := []struct {
		ds   *Dataset
		want string
	}{
		{Range(-1), "Range(-1): negative"},
		{Range(5).MapBatches(double, ActorPool(3, 1)), "ActorPool(3, 1)"},
		{Range(5).Map(nil), "the function is nil"},
		{Range(5).Map(plus100, ActorPool(1, 2)), "ActorPool applies to MapBatches only"},
		{Range(5).Limit(-2), "Limit(-2)"},
		{Range(5).SelectColumns(), "no columns given"},
		{FromItems(42), "items must be a slice"},
	}
	for _, c := range cases {
		err := c.ds.planErr()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.ds.Explain(), err, c.want)
		}
	}
}
