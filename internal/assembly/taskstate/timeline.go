package taskstate

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"strconv"

	"github.com/ray-go/ray/internal/assembly/core"
)

// WriteTimeline writes the tasks of r as Chrome trace event JSON (the format chrome://tracing
// and Perfetto open, "JSON Object Format"): a process per node, a thread (track) per
// worker, a complete event ("X") per task attempt that ran, and a flow (an "s" event at
// the end of a producer, an "f" event at the start of its consumer) for each edge whose
// two ends ran. An attempt that ended without running (failed or cancelled before it
// ran: an unknown function, resources no node has, a dead actor) is an instant event
// ("i") at its end, on a "not run" track of its owner's node (an actor call's: its
// actor's track), with its state and error. Times are microseconds since the earliest
// of these. Attempts that have not ended and not started (waiting) are left out; one
// that is running has no span until it ends.
//
// The complete events of one thread must nest (a span inside another ends before it), or
// Perfetto and chrome://tracing mis-draw them. A span's start is its owner's estimate (the
// result's arrival less the run time the worker measured), and results come in batches,
// so spans of tasks a worker (or a serial actor) ran back to back can overlap a little
// without nesting. Such a span goes on another track of the same worker, named with
// " (2)", " (3)", ... after the worker: every track's spans nest, and none is moved in
// time.
func WriteTimeline(w io.Writer, r *core.TaskReport) error {
	type span struct {
		ev       *core.TaskEvent
		pid, tid int
		at       int64 // its start, or a mark's end
		mark     bool
	}
	spans := make([]span, 0, len(r.Tasks))
	var t0 int64
	pids := map[string]int{}
	tids := map[[2]string]int{}
	for i := range r.Tasks {
		ev := &r.Tasks[i]
		drawn, mark := Drawn(ev), NotRun(ev)
		if !drawn && !mark {
			continue
		}
		node := ev.Node
		if node == "" {
			node = ev.Owner
		}
		worker, at := ev.Worker, ev.Started
		if mark {
			at = ev.Ended
			if worker == "" {
				worker = notRunTrack
			}
		}
		pid, ok := pids[node]
		if !ok {
			pid = len(pids) + 1
			pids[node] = pid
		}
		wk := [2]string{node, worker}
		tid, ok := tids[wk]
		if !ok {
			tid = len(tids) + 1
			tids[wk] = tid
		}
		spans = append(spans, span{ev: ev, pid: pid, tid: tid, at: at, mark: mark})
		if t0 == 0 || at < t0 {
			t0 = at
		}
	}
	// Oldest first reads best in a file and in viewers that stream it; of spans that start
	// together, the longest first (it holds the others).
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].at != spans[j].at {
			return spans[i].at < spans[j].at
		}
		return spans[i].ev.Ended > spans[j].ev.Ended
	})
	// Each track's spans nest: a span goes on the first of its track's lanes where it ends
	// inside the innermost open span, else on the first lane with no span open at its
	// start, else on a new lane.
	type lane struct {
		tid  int
		open []int64 // the ends of the spans open at the last start, outermost first
	}
	lanes := map[int][]*lane{} // by the track's first tid
	names := map[int][2]string{}
	for wk, tid := range tids {
		names[tid] = wk
	}
	for i := range spans {
		sp := &spans[i]
		if sp.mark {
			continue
		}
		ls := lanes[sp.tid]
		if ls == nil {
			ls = []*lane{{tid: sp.tid}}
		}
		start, end := sp.ev.Started, sp.ev.Ended
		// Inside an open span if one holds it (a nested task stays with its parent),
		// else on the first lane with none open.
		var in, free *lane
		for _, l := range ls {
			for len(l.open) > 0 && l.open[len(l.open)-1] <= start {
				l.open = l.open[:len(l.open)-1]
			}
			switch {
			case len(l.open) == 0 && free == nil:
				free = l
			case len(l.open) > 0 && end <= l.open[len(l.open)-1] && in == nil:
				in = l
			}
		}
		if in == nil {
			in = free
		}
		if in != nil {
			in.open = append(in.open, end)
			lanes[sp.tid] = ls
			sp.tid = in.tid
		} else {
			wk := names[sp.tid]
			wk[1] = laneName(wk[1], len(ls)+1)
			tid := len(tids) + 1
			tids[wk] = tid
			track := sp.tid
			ls = append(ls, &lane{tid: tid, open: []int64{end}})
			lanes[track] = ls
			sp.tid = tid
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	buf := make([]byte, 0, 512)
	first := true
	emit := func(b []byte) {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		bw.Write(b)
	}
	us := func(b []byte, ns int64) []byte {
		return strconv.AppendFloat(b, float64(ns-t0)/1e3, 'f', 3, 64)
	}
	quoted := map[string][]byte{} // function names repeat: quote each once
	str := func(b []byte, s string) []byte {
		q, ok := quoted[s]
		if !ok {
			q, _ = json.Marshal(s)
			if len(quoted) < 1<<16 {
				quoted[s] = q
			}
		}
		return append(b, q...)
	}
	bw.WriteString(`{"displayTimeUnit":"ms","traceEvents":[` + "\n")
	for node, pid := range pids {
		buf = append(buf[:0], `{"name":"process_name","ph":"M","pid":`...)
		buf = strconv.AppendInt(buf, int64(pid), 10)
		buf = append(buf, `,"tid":0,"args":{"name":`...)
		buf = str(buf, "node "+node)
		buf = append(buf, "}}"...)
		emit(buf)
	}
	for wk, tid := range tids {
		buf = append(buf[:0], `{"name":"thread_name","ph":"M","pid":`...)
		buf = strconv.AppendInt(buf, int64(pids[wk[0]]), 10)
		buf = append(buf, `,"tid":`...)
		buf = strconv.AppendInt(buf, int64(tid), 10)
		buf = append(buf, `,"args":{"name":`...)
		name := wk[1]
		if name == "" {
			name = "worker"
		}
		buf = str(buf, name)
		buf = append(buf, "}}"...)
		emit(buf)
	}
	// A task's finished span, by ID, for the flows.
	byID := make(map[string]*span, len(spans))
	for i := range spans {
		sp := &spans[i]
		ev := sp.ev
		buf = append(buf[:0], `{"name":`...)
		buf = str(buf, ev.Function)
		if sp.mark {
			buf = append(buf, `,"cat":"task","ph":"i","s":"t","ts":`...)
			buf = us(buf, ev.Ended)
		} else {
			buf = append(buf, `,"cat":"task","ph":"X","ts":`...)
			buf = us(buf, ev.Started)
			buf = append(buf, `,"dur":`...)
			buf = strconv.AppendFloat(buf, float64(ev.Ended-ev.Started)/1e3, 'f', 3, 64)
		}
		buf = append(buf, `,"pid":`...)
		buf = strconv.AppendInt(buf, int64(sp.pid), 10)
		buf = append(buf, `,"tid":`...)
		buf = strconv.AppendInt(buf, int64(sp.tid), 10)
		buf = append(buf, `,"args":{"task_id":"`...)
		buf = append(buf, ev.TaskID...)
		buf = append(buf, `","state":"`...)
		buf = append(buf, ev.State...)
		buf = append(buf, `","attempt":`...)
		buf = strconv.AppendInt(buf, int64(ev.Attempt), 10)
		if ev.Actor {
			buf = append(buf, `,"actor_incarnation":`...)
			buf = strconv.AppendInt(buf, int64(ev.Incarnation), 10)
		}
		if ev.Error != "" {
			buf = append(buf, `,"error":`...)
			buf = str(buf, ev.Error)
		}
		buf = append(buf, "}}"...)
		emit(buf)
		if ev.State == core.StateFinished && !sp.mark {
			byID[ev.TaskID] = sp
		}
	}
	flow := 0
	for _, e := range r.Edges {
		p, c := byID[e.Producer], byID[e.Consumer]
		if p == nil || c == nil {
			continue
		}
		flow++
		// The start binds to the producer's span (a moment before its end), the end to the
		// consumer's span at its start ("bp":"e": the enclosing slice).
		at := max(p.ev.Started, p.ev.Ended-1000)
		for _, f := range []struct {
			ph       string
			ts       int64
			pid, tid int
		}{{"s", at, p.pid, p.tid}, {"f", c.ev.Started, c.pid, c.tid}} {
			buf = append(buf[:0], `{"name":"result","cat":"dependency","ph":"`...)
			buf = append(buf, f.ph...)
			buf = append(buf, `","id":`...)
			buf = strconv.AppendInt(buf, int64(flow), 10)
			buf = append(buf, `,"ts":`...)
			buf = us(buf, f.ts)
			buf = append(buf, `,"pid":`...)
			buf = strconv.AppendInt(buf, int64(f.pid), 10)
			buf = append(buf, `,"tid":`...)
			buf = strconv.AppendInt(buf, int64(f.tid), 10)
			if f.ph == "f" {
				buf = append(buf, `,"bp":"e"`...)
			}
			buf = append(buf, '}')
			emit(buf)
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// Drawn reports whether WriteTimeline draws the attempt ev as a span: it started and ended.
func Drawn(ev *core.TaskEvent) bool {
	return ev.Started != 0 && ev.Ended != 0 && ev.Ended >= ev.Started
}

// NotRun reports whether the attempt ev ended without running (it failed or was cancelled
// before a worker started it): WriteTimeline marks it with an instant event at its end.
func NotRun(ev *core.TaskEvent) bool {
	return ev.Started == 0 && ev.Ended != 0 && ev.State != core.StateFinished
}

// laneName names the lane-th track (2, 3, ...) of the worker named worker.
func laneName(worker string, lane int) string {
	if worker == "" {
		worker = "worker"
	}
	return worker + " (" + strconv.Itoa(lane) + ")"
}

// notRunTrack names the track of a node's attempts that ended without running.
const notRunTrack = "not run"
