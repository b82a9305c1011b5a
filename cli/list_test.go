package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// TestListActorsRecords: actor records read from the GCS become rows with Ray's state
// names, filters keep what matches (= and !=), and each output format prints them.
func TestListActorsRecords(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(id byte, class, name string, phase lifecycle.Phase, node string) {
		info := &pb.ActorInfo{ActorId: []byte{id, 0xaa}, Class: class, Name: name, Phase: int32(phase), Node: node, JobId: "j1",
			Resources: []*pb.ResourceQty{{Name: "CPU", Amount: int64(sched.Unit)}}}
		if phase == lifecycle.Pending {
			info.Waiting = "waiting for resources {CPU=1} on node n1: they are in use by other tasks or actors"
		}
		if phase == lifecycle.Alive {
			info.History = []*pb.ActorTransition{{Phase: int32(lifecycle.Pending), UnixMs: 1_700_000_000_000, Incarnation: 1},
				{Phase: int32(lifecycle.Alive), UnixMs: 1_700_000_001_000, Incarnation: 1, Node: node}}
		}
		b, err := proto.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, gcs.ActorKey(string(rune('a'+id))), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	put(1, "Counter", "c1", lifecycle.Alive, "n1")
	put(2, "Counter", "", lifecycle.Dead, "")
	put(3, "Logger", "log", lifecycle.Pending, "")
	if _, err := s.Put(ctx, gcs.ActorKey("junk"), []byte{0xff, 0xff, 0xff}, 0); err != nil {
		t.Fatal(err)
	}
	recs, err := readActors(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (the corrupt one left out): %v", len(recs), recs)
	}
	states := map[string]string{}
	for _, r := range recs {
		id, _ := r.get("actor_id")
		st, _ := r.get("state")
		states[id.(string)] = st.(string)
	}
	if states["01aa"] != "ALIVE" || states["02aa"] != "DEAD" || states["03aa"] != "PENDING_CREATION" {
		t.Fatalf("states %v", states)
	}
	// A pending actor's detail says why it waits.
	for _, r := range recs {
		if id, _ := r.get("actor_id"); id == "03aa" {
			if d, _ := r.get("detail"); d != "waiting for resources {CPU=1} on node n1: they are in use by other tasks or actors" {
				t.Fatalf("the pending actor's detail is %q, want why it waits", d)
			}
		}
	}
	fs, err := parseFilters([]string{"class=Counter", "state!=DEAD"})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := filterRecords(recs, fs)
	if err != nil || len(kept) != 1 {
		t.Fatalf("filtered: %v, %v; want the one alive Counter", kept, err)
	}
	if _, err := filterRecords(recs, []filter{{key: "colour", value: "x"}}); err == nil || !strings.Contains(err.Error(), "class") {
		t.Fatalf("filter on an unknown field: %v, want an error naming the fields there are", err)
	}
	if _, err := parseFilters([]string{"state"}); err == nil || !strings.Contains(err.Error(), "FIELD=VALUE") {
		t.Fatalf("a filter without =: %v", err)
	}
	// An enum field's value in any case is that value (state=alive used to keep nothing).
	fs, err = parseFilters([]string{"state=alive", "class=Counter"})
	if err == nil {
		fs, err = enumFilters("actors", fs)
	}
	if err != nil {
		t.Fatal(err)
	}
	if kept, err := filterRecords(recs, fs); err != nil || len(kept) != 1 {
		t.Fatalf("state=alive: %v, %v; want the one alive Counter", kept, err)
	}

	var out bytes.Buffer
	if err := printRecords(&out, "json", kinds[2].columns, kept); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 1 || rows[0]["name"] != "c1" {
		t.Fatalf("json: %v %s", err, out.String())
	}
	if res, _ := rows[0]["resources"].(map[string]any); res["CPU"] != 1.0 {
		t.Fatalf("json resources %v, want CPU 1", rows[0]["resources"])
	}
	if hist, _ := rows[0]["history"].([]any); len(hist) != 2 || hist[1].(map[string]any)["state"] != "ALIVE" ||
		hist[1].(map[string]any)["node"] != "n1" || rows[0]["start_time"] == "" || rows[0]["end_time"] != "" {
		t.Fatalf("json history %v start %v end %v; want PENDING_CREATION then ALIVE on n1, a start time, no end", rows[0]["history"], rows[0]["start_time"], rows[0]["end_time"])
	}
	out.Reset()
	if err := printRecords(&out, "table", kinds[2].columns, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ACTOR_ID") || !strings.Contains(lines[0], "NAMESPACE") || !strings.Contains(out.String(), "PENDING_CREATION") {
		t.Fatalf("table:\n%s", out.String())
	}
	out.Reset()
	if err := printRecords(&out, "yaml", nil, kept); err != nil {
		t.Fatal(err)
	}
	if y := out.String(); !strings.HasPrefix(y, `- actor_id: "01aa"`) || !strings.Contains(y, `  resources: {"CPU": 1}`) ||
		!strings.Contains(y, "  history:\n    - state: \"PENDING_CREATION\"\n") || !strings.Contains(y, "    - state: \"ALIVE\"\n") {
		t.Fatalf("yaml:\n%s", y)
	}
}

// TestSummarize: actors counted by class and state, a column per state seen, and a total.
func TestSummarize(t *testing.T) {
	recs := []record{
		{{"actor_id", "1"}, {"class", "B"}, {"state", "ALIVE"}},
		{{"actor_id", "2"}, {"class", "A"}, {"state", "DEAD"}},
		{{"actor_id", "3"}, {"class", "A"}, {"state", "ALIVE"}},
		{{"actor_id", "4"}, {"class", "A"}, {"state", "ALIVE"}},
	}
	var out bytes.Buffer
	if err := printRecords(&out, "json", nil, summarize(recs, "class")); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["class"] != "A" || rows[0]["ALIVE"] != 2.0 || rows[0]["DEAD"] != 1.0 || rows[0]["total"] != 3.0 ||
		rows[1]["class"] != "B" || rows[1]["ALIVE"] != 1.0 || rows[1]["DEAD"] != 0.0 {
		t.Fatalf("summary: %s", out.String())
	}
	byState := summarize(recs, "state")
	if len(byState) != 1 || scalar(byState[0][0].v) != "3" {
		t.Fatalf("by state: %v", byState)
	}
	out.Reset()
	if err := printRecords(&out, "table", nil, summarize(recs, "class")); err != nil || !strings.HasPrefix(out.String(), "CLASS") {
		t.Fatalf("table: %v\n%s", err, out.String())
	}
}

// TestVersion: rayctl --version names the toolchain at least.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"rayctl", "--version"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: code %d, %q %q", code, out.String(), errOut.String())
	}
}

// A summary of nothing (no columns known) says so in text; it printed a blank line.
func TestPrintRecordsOfNothing(t *testing.T) {
	for format, want := range map[string]string{"": "(none)\n", "json": "[]\n", "yaml": "[]\n"} {
		var b strings.Builder
		if err := printRecords(&b, format, nil, nil); err != nil || b.String() != want {
			t.Errorf("format %q: %q (%v), want %q", format, b.String(), err, want)
		}
	}
}

// TestEnumFilters: filters on enum-valued fields of every kind of list take their values
// in any case and are written back in the records' spelling (tasks and objects push them
// to the processes, which compare exactly); a value the field never has is refused with
// the values it has. Before, state=ready or state=bogus matched nothing and exited 0.
func TestEnumFilters(t *testing.T) {
	for _, c := range []struct {
		kind, in, want, err string
	}{
		{"objects", "state=ready", "state=READY", ""},
		{"objects", "reference_type!=borrowed", "reference_type!=BORROWED", ""},
		{"objects", "state=bogus", "", "filter state=bogus: the state of objects is one of PENDING, READY, FAILED, FREED, AT_OWNER, LOST (in any case)"},
		{"tasks", "state=Finished", "state=FINISHED", ""},
		{"tasks", "state=failed_retried", "state=FAILED_RETRIED", ""},
		{"tasks", "type=actor_task", "type=ACTOR_TASK", ""},
		{"tasks", "error_type=object_lost", "error_type=OBJECT_LOST", ""},
		{"tasks", "error_type=", "error_type=", ""},
		{"tasks", "error_type=oops", "", "one of APPLICATION, PANIC, SYSTEM,"},
		{"tasks", "name=anything", "name=anything", ""}, // not an enum: as typed
		{"actors", "state=pending_creation", "state=PENDING_CREATION", ""},
		{"actors", "detached=TRUE", "detached=true", ""},
		{"actors", "state=", "", "the state of actors is one of PENDING_CREATION, ALIVE, RESTARTING, DEAD"},
		{"nodes", "state=dead", "state=DEAD", ""},
		{"nodes", "head=False", "head=false", ""},
		{"nodes", "state=unreachable", "state=UNREACHABLE", ""}, // a driver whose lease lapsed
		{"nodes", "role=Driver", "role=driver", ""},
		{"jobs", "driver_state=dead", "driver_state=DEAD", ""},
		{"jobs", "state=succeeded", "state=SUCCEEDED", ""},
		{"jobs", "state=finished", "", "one of PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED"},
		{"placement-groups", "strategy=strict_spread", "strategy=STRICT_SPREAD", ""},
		{"placement-groups", "state=created", "state=CREATED", ""},
	} {
		fs, err := parseFilters([]string{c.in})
		if err != nil {
			t.Fatal(err)
		}
		fs, err = enumFilters(c.kind, fs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: %v, want an error saying %q", c.kind, c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.kind, c.in, err)
			continue
		}
		op := "="
		if fs[0].neg {
			op = "!="
		}
		if got := fs[0].key + op + fs[0].value; got != c.want {
			t.Errorf("%s %s: %s, want %s", c.kind, c.in, got, c.want)
		}
	}
}

// TestListNodesResources: the nodes table shows each node's resources in use of its total
// (it showed 0 in use, whatever was used, under RESOURCES_TOTAL), named so; JSON keeps both
// fields as maps.
func TestListNodesResources(t *testing.T) {
	k, _ := kindOf("nodes")
	recs := []record{{{"node_id", "n1"}, {"state", "ALIVE"}, {"head", true}, {"host", "vm"}, {"pid", 7},
		{"resources_total", map[string]float64{"CPU": 2, "accel": 1}}, {"resources_in_use", map[string]float64{"CPU": 1}},
		{"object_store_budget", int64(100)}, {"object_store_used", int64(0)}}}
	var out bytes.Buffer
	if err := printRecords(&out, "table", k.columns, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "RESOURCES_IN_USE/TOTAL") || !strings.Contains(lines[1], "CPU 1/2, accel 0/1") {
		t.Fatalf("table:\n%s", out.String())
	}
	if got := scalar(map[string]float64{"accel": 1, "CPU": 2}); got != "CPU 2, accel 1" {
		t.Fatalf("a map of resources alone prints %q, want their amounts", got)
	}
	out.Reset()
	if err := printRecords(&out, "json", k.columns, recs); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || rows[0]["resources_in_use"].(map[string]any)["CPU"] != 1.0 ||
		rows[0]["resources_total"].(map[string]any)["CPU"] != 2.0 {
		t.Fatalf("json: %v %s", err, out.String())
	}
}

// TestTableCellsOneLine: a value with newlines, carriage returns or tabs (a task's error)
// stays on its row and in its column of a table, escaped; JSON keeps it as it is.
func TestTableCellsOneLine(t *testing.T) {
	msg := "boom\nat line 2\r\n\tcaused by: x"
	recs := []record{
		{{"task_id", "t1"}, {"attempt", 0}, {"name", "f\tg"}, {"state", "FAILED"}, {"job_id", "j1"}, {"node", "n1"}, {"started", "s"}, {"duration", "1s"}, {"error", msg}},
		{{"task_id", "t2"}, {"attempt", 0}, {"name", "f"}, {"state", "FINISHED"}, {"job_id", "j1"}, {"node", "n1"}, {"started", "s"}, {"duration", "1s"}, {"error", ""}},
	}
	var out bytes.Buffer
	if err := printRecords(&out, "table", taskColumns, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], `boom\nat line 2\r\n\tcaused by: x`) || !strings.Contains(lines[1], `f\tg`) ||
		len(strings.Fields(lines[2])) != len(taskColumns) {
		t.Fatalf("table: %d lines\n%s", len(lines), out.String())
	}
	// A summary's cells too (its groups are names).
	out.Reset()
	if err := printRecords(&out, "table", nil, summarize([]record{{{"class", "a\nb"}, {"state", "ALIVE"}}}, "class")); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], `a\nb `) {
		t.Fatalf("summary table:\n%s", out.String())
	}
	out.Reset()
	if err := printRecords(&out, "json", taskColumns, recs[:1]); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || rows[0]["error"] != msg {
		t.Fatalf("json: %v %s", err, out.String())
	}
}

// TestTimelineCount: rayctl timeline counts the attempts it drew; it said "wrote 3 task
// attempts" of two spans and one attempt still running.
func TestTimelineCount(t *testing.T) {
	tasks := []core.TaskEvent{{Started: 1, Ended: 2}, {Started: 3, Ended: 5}, {Started: 4}}
	if got := timelineCount(tasks); got != "wrote 2 task attempts (of 3: 1 still running or waiting, not drawn)" {
		t.Fatalf("%q", got)
	}
	if got := timelineCount(tasks[:1]); got != "wrote 1 task attempt" {
		t.Fatalf("%q", got)
	}
	// An attempt that failed as it was submitted never started: it is marked, not left out.
	tasks = append(tasks, core.TaskEvent{Submitted: 6, Ended: 6, State: core.StateFailed})
	if got := timelineCount(tasks); got != "wrote 3 task attempts (1 failed or was cancelled before it ran: a mark) (of 4: 1 still running or waiting, not drawn)" {
		t.Fatalf("%q", got)
	}
}

// TestKindFields: each kind's fields (what --filter takes, checked before anything is
// read) are those of its records, and include every field its enum and ID filters know,
// and for tasks and objects those the processes apply.
func TestKindFields(t *testing.T) {
	for _, k := range kinds {
		fields := k.fields()
		if len(fields) == 0 {
			t.Fatalf("%s: no fields", k.name)
		}
		for _, c := range k.columns {
			if _, ok := derived[c]; !ok && !slices.Contains(fields, c) {
				t.Errorf("%s: column %q is no field", k.name, c)
			}
		}
		for f := range enumFields[k.name] {
			if !slices.Contains(fields, f) {
				t.Errorf("%s: enum filter field %q is no field", k.name, f)
			}
		}
		for f := range idFields[k.name] {
			if !slices.Contains(fields, f) {
				t.Errorf("%s: ID filter field %q is no field", k.name, f)
			}
		}
		if err := knownFields(k, []filter{{key: k.id, value: "x"}, {key: "colour", value: "x"}}); err == nil ||
			!strings.Contains(err.Error(), `"colour"`) || !strings.Contains(err.Error(), k.id) {
			t.Errorf("%s: filter on colour: %v, want it refused naming the fields", k.name, err)
		}
	}
	for f := range pushed {
		if !slices.Contains(taskFields(), f) {
			t.Errorf("tasks: pushed filter field %q is no field", f)
		}
	}
	for f := range objectPushed {
		if !slices.Contains(objectFields(), f) {
			t.Errorf("objects: pushed filter field %q is no field", f)
		}
	}
	// A driver's row of list nodes has an agent's fields, in the same order.
	if a, d := fieldsOf(nodeRecord(clusterstate.NodeStatus{}))(), fieldsOf(driverRecord(clusterstate.DriverStatus{}))(); !slices.Equal(a, d) {
		t.Fatalf("an agent's fields %v, a driver's %v", a, d)
	}
	// Actors: namespace and name are fields, and select records.
	k, _ := kindOf("actors")
	recs := []record{actorRecord(clusterstate.Actor{ActorID: "a1", Name: "counter", Namespace: "ns1"}),
		actorRecord(clusterstate.Actor{ActorID: "a2", Name: "counter", Namespace: "ns2"}),
		actorRecord(clusterstate.Actor{ActorID: "a3", Namespace: "ns1"})}
	fs := []filter{{key: "namespace", value: "ns1"}, {key: "name", value: "counter"}}
	if err := knownFields(k, fs); err != nil {
		t.Fatal(err)
	}
	if kept, err := filterRecords(recs, fs); err != nil || len(kept) != 1 || kept[0][0].v != "a1" {
		t.Fatalf("namespace=ns1 name=counter: %v, %v; want a1", kept, err)
	}
}

// TestLimitNegative: a negative --limit is refused with what is allowed, before any
// cluster is asked (it printed every record, as 0 does).
func TestLimitNegative(t *testing.T) {
	for _, args := range [][]string{{"list", "tasks"}, {"list", "actors"}, {"list", "objects"}, {"timeline"}} {
		var out, errb bytes.Buffer
		argv := append(append([]string{"rayctl"}, args...), "--limit", "-1", "--address", "127.0.0.1:23999")
		code := Main(argv, &out, &errb)
		if code != ExitError || !strings.Contains(errb.String(), "--limit -1") || !strings.Contains(errb.String(), "0 for all") {
			t.Errorf("rayctl %s --limit -1: exit %d, %q, want exit %d and an error saying what --limit takes", strings.Join(args, " "), code, errb.String(), ExitError)
		}
	}
}
