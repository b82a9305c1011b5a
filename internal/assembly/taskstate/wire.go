package taskstate

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/assembly/core"
)

// The wire form of a report (an answer in the GCS): a compact binary layout, s2-compressed.
// JSON took seconds for 100,000 tasks; this takes tens of milliseconds. Written by hand
// because a report is a flat list of the same few fields and most strings repeat
// (functions, states, nodes, workers), which a string table makes small.
//
//	"RTS2" total dropped
//	nstrings (len bytes)...                          the string table
//	ntasks (task_id attempt fn state job node worker owner errkind actor
//	        submitted ready-submitted dispatched-submitted started-submitted ended-submitted error
//	        log_start log_end-log_start)...
//	nedges (producer consumer)...
//	nsummary (fn state count)...
//
// Numbers are uvarints (times and their deltas zig-zag varints); task IDs are a byte 1 and
// their 16 bytes (IDs in lowercase hex, as ids.TaskID.String makes them: half the bytes to
// carry through etcd and decode) or a byte 0 and a length-prefixed string (anything else);
// errors are length-prefixed strings; the other strings are indices into the table.

var magic = []byte("RTS2") // RTS1 had no log offsets and task IDs in hex

// EncodeReport is a report's wire form.
func EncodeReport(r *core.TaskReport) ([]byte, error) {
	idx := map[string]uint64{}
	var table []string
	str := func(s string) uint64 {
		i, ok := idx[s]
		if !ok {
			i = uint64(len(table))
			idx[s] = i
			table = append(table, s)
		}
		return i
	}
	body := make([]byte, 0, 64*len(r.Tasks)+64)
	put := func(v uint64) { body = binary.AppendUvarint(body, v) }
	putS := func(s string) { put(uint64(len(s))); body = append(body, s...) }
	putID := func(s string) {
		if len(s) == 2*taskIDBytes && isLowerHex(s) {
			body = append(body, 1)
			body, _ = hex.AppendDecode(body, []byte(s))
			return
		}
		body = append(body, 0)
		putS(s)
	}
	put(uint64(len(r.Tasks)))
	for i := range r.Tasks {
		t := &r.Tasks[i]
		putID(t.TaskID)
		put(uint64(t.Attempt))
		for _, s := range []string{t.Function, t.State, t.Job, t.Node, t.Worker, t.Owner, t.ErrorKind} {
			put(str(s))
		}
		if t.Actor {
			put(1 + uint64(t.Incarnation)) // an actor call: 1 + its incarnation
		} else {
			put(0)
		}
		body = binary.AppendVarint(body, t.Submitted)
		for _, v := range []int64{t.Ready, t.Dispatched, t.Started, t.Ended} {
			body = binary.AppendVarint(body, v-t.Submitted)
		}
		putS(t.Error)
		body = binary.AppendVarint(body, t.LogStart)
		body = binary.AppendVarint(body, t.LogEnd-t.LogStart)
	}
	put(uint64(len(r.Edges)))
	for _, e := range r.Edges {
		putID(e.Producer)
		putID(e.Consumer)
	}
	put(uint64(len(r.Summary)))
	for _, c := range r.Summary {
		put(str(c.Function))
		put(str(c.State))
		put(uint64(c.Count))
	}
	head := append([]byte(nil), magic...)
	head = binary.AppendUvarint(head, uint64(r.Total))
	head = binary.AppendUvarint(head, uint64(r.Dropped))
	head = binary.AppendUvarint(head, uint64(len(table)))
	for _, s := range table {
		head = binary.AppendUvarint(head, uint64(len(s)))
		head = append(head, s...)
	}
	return s2.Encode(nil, append(head, body...)), nil
}

var errCorrupt = errors.New("taskstate: corrupt answer")

// DecodeReport reads what EncodeReport wrote.
func DecodeReport(b []byte) (*core.TaskReport, error) {
	n, err := s2.DecodedLen(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if n > maxAnswerBytes {
		return nil, fmt.Errorf("taskstate: an answer of %d bytes is over the limit", n)
	}
	raw, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	d := decoder{b: raw}
	if len(raw) < len(magic) || string(raw[:len(magic)]) != string(magic) {
		return nil, fmt.Errorf("%w: not a report", errCorrupt)
	}
	d.b = raw[len(magic):]
	r := &core.TaskReport{Total: int(d.num(1 << 40)), Dropped: int64(d.num(1 << 62))}
	table := make([]string, d.count(1))
	for i := range table {
		table[i] = d.str()
	}
	ref := func() string {
		i := d.num(uint64(len(table)))
		if d.err != nil || i >= uint64(len(table)) {
			d.fail()
			return ""
		}
		return table[i]
	}
	r.Tasks = make([]core.TaskEvent, d.count(16))
	for i := range r.Tasks {
		t := &r.Tasks[i]
		t.TaskID = d.id()
		t.Attempt = int(d.num(1 << 31))
		t.Function, t.State, t.Job, t.Node, t.Worker, t.Owner, t.ErrorKind = ref(), ref(), ref(), ref(), ref(), ref(), ref()
		if a := d.num(1 << 16); a > 0 {
			t.Actor, t.Incarnation = true, int(a-1)
		}
		t.Submitted = d.varint()
		t.Ready, t.Dispatched, t.Started, t.Ended = t.Submitted+d.varint(), t.Submitted+d.varint(), t.Submitted+d.varint(), t.Submitted+d.varint()
		t.Error = d.str()
		t.LogStart = d.varint()
		t.LogEnd = t.LogStart + d.varint()
		if d.err != nil {
			return nil, d.err
		}
	}
	if n := d.count(2); n > 0 {
		r.Edges = make([]core.TaskEdge, n)
		for i := range r.Edges {
			r.Edges[i] = core.TaskEdge{Producer: d.id(), Consumer: d.id()}
		}
	}
	if n := d.count(3); n > 0 {
		r.Summary = make([]core.TaskCount, n)
		for i := range r.Summary {
			r.Summary[i] = core.TaskCount{Function: ref(), State: ref(), Count: int(d.num(1 << 40))}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// taskIDBytes is the size of a task ID's binary form.
const taskIDBytes = 16

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// id reads what putID wrote.
func (d *decoder) id() string {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return ""
	}
	kind := d.b[0]
	d.b = d.b[1:]
	switch kind {
	case 0:
		return d.str()
	case 1:
		if len(d.b) < taskIDBytes {
			d.fail()
			return ""
		}
		s := hex.EncodeToString(d.b[:taskIDBytes])
		d.b = d.b[taskIDBytes:]
		return s
	}
	d.fail()
	return ""
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

// num reads a uvarint of at most lim.
func (d *decoder) num(lim uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > lim {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items of at least min bytes each (bounded by what is left).
func (d *decoder) count(min int) int {
	return int(d.num(uint64(len(d.b) / min)))
}

func (d *decoder) str() string {
	n := d.num(uint64(len(d.b)))
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
