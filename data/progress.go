package data

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// draw redraws one progress line per operator on stderr (only called when stderr is a
// terminal and progress is on): name, running and queued tasks, bytes held, actors, and a
// bar of blocks done.
func (e *executor) draw(final bool) {
	e.lastDraw = time.Now()
	var b strings.Builder
	if e.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", e.drawn)
	}
	lines := 0
	for i := len(e.ops) - 1; i >= 0; i-- {
		op := e.ops[i]
		done := len(op.stats.rows)
		total := done + len(op.inflight) + len(op.pending)
		if op.p.kind == pSource {
			total = op.nextSeq
		}
		const width = 24
		filled := 0
		if total > 0 {
			filled = min(width, done*width/total)
		}
		bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
		fmt.Fprintf(&b, "\x1b[2K%-40.40s %s %d/%d blocks  active %d queued %d  actors %d\n",
			op.name, bar, done, total, len(op.inflight), len(op.pending), len(op.actors))
		lines++
	}
	fmt.Fprintf(&b, "\x1b[2Kobject store: %.1f MiB held of %.1f MiB budget\n", float64(e.usage)/(1<<20), float64(e.budget)/(1<<20))
	lines++
	e.drawn = lines
	if final {
		e.drawn = 0
	}
	os.Stderr.WriteString(b.String())
}
