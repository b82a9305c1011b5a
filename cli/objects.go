package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/internal/base/ids"
)

// Objects in the state API: `rayctl list objects`, `get object`, `summary objects`. Like
// tasks, objects are not listed in the GCS: each process answers for the objects it owns
// and borrows (internal/assembly/core, objectstate.go) a query put in the GCS; rayctl asks
// and merges (an object borrowed elsewhere has its owner's row and one per borrower).

var objectColumns = []string{"object_id", "size", "state", "reference_type", "location", "owner_node", "job_id"}

// objectPushed are the --filter fields the processes apply (with "=").
var objectPushed = map[string]func(q *core.ObjectQuery, job *string, v string){
	"state":          func(q *core.ObjectQuery, _ *string, v string) { q.State = v },
	"reference_type": func(q *core.ObjectQuery, _ *string, v string) { q.RefType = v },
	"object_id":      func(q *core.ObjectQuery, _ *string, v string) { q.ObjectID = v },
	"job_id":         func(_ *core.ObjectQuery, job *string, v string) { *job = v },
}

// objectRecord is an object as a record (Ray's field names where Ray has one).
func objectRecord(o *core.ObjectInfo) record {
	return record{{"object_id", o.ObjectID}, {"size", o.Size}, {"state", o.State}, {"reference_type", o.RefType},
		{"location", o.Location}, {"owner_node", o.Owner}, {"job_id", o.Job}, {"task_id", o.Task},
		{"local_refs", o.Local}, {"lineage_refs", o.Lineage}, {"borrowers", o.Borrowers}, {"holder_node", o.Holder},
		{"owner_address", o.OwnerAddress}, {"call_site", o.CallSite}}
}

func objectFields() []string {
	var out []string
	for _, f := range objectRecord(&core.ObjectInfo{}) {
		out = append(out, f.k)
	}
	return out
}

// gatherObjects asks the cluster's processes (those of job; every job's when "").
func gatherObjects(c *ucli.Context, job string, q core.ObjectQuery) (*taskstate.ObjectResult, error) {
	store, addr, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	res, err := taskstate.GatherObjects(ctx, store, job, q, taskstate.Options{})
	if err != nil {
		return nil, exitf(ExitError, "read the objects from %s: %v", strings.Join(addr, ","), err)
	}
	if len(res.Missing) > 0 {
		sort.Strings(res.Missing)
		fmt.Fprintf(c.App.ErrWriter, "rayctl: %d process(es) did not answer, their objects are missing: %s\n",
			len(res.Missing), taskstate.MissingList(res.Missing, taskstate.WhyMissing(ctx, store, res.Missing)))
	}
	return res, nil
}

func listObjects(c *ucli.Context, format string, filters []filter, limit int) error {
	var q core.ObjectQuery
	job := ""
	var rest []filter
	known := objectFields()
	for _, f := range filters {
		if set, ok := objectPushed[f.key]; ok && !f.neg {
			set(&q, &job, f.value)
			continue
		}
		if !contains(known, f.key) {
			return exitf(ExitError, "filter on %q: objects have no such field; they have %s", f.key, strings.Join(known, ", "))
		}
		rest = append(rest, f)
	}
	if len(rest) == 0 {
		q.Limit = limit
	}
	res, err := gatherObjects(c, job, q)
	if err != nil {
		return err
	}
	recs := make([]record, len(res.Objects))
	matched := make([]string, len(res.Objects))
	for i := range res.Objects {
		recs[i] = objectRecord(&res.Objects[i])
		matched[i] = res.Objects[i].ObjectID
	}
	if q.ObjectID != "" {
		// The processes matched a prefix: of one object, or say so.
		if err := checkMatchedIDs(objectIDs, "object_id", q.ObjectID, matched, 2*ids.ObjectIDLen); err != nil {
			return err
		}
	}
	columns := objectColumns
	if c.Bool("detail") {
		columns = append(append([]string(nil), objectColumns...), "call_site")
	}
	return printFiltered(c, format, "objects", columns, recs, res.Total, rest, limit)
}

func getObject(c *ucli.Context, format, id string) error {
	if len(id) < 6 {
		return exitf(ExitError, "give at least 6 characters of the object ID, got %q", id)
	}
	// No limit: an object has a row in its owner and one in each process that borrows it.
	res, err := gatherObjects(c, "", core.ObjectQuery{ObjectID: strings.ToLower(id)})
	if err != nil {
		return err
	}
	recs, err := objectRows(id, res.Objects)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if len(recs) == 1 {
			return enc.Encode(recs[0])
		}
		return enc.Encode(recs)
	}
	if len(recs) == 1 {
		return printYAML(c.App.Writer, recs[0], "")
	}
	return printRecords(c.App.Writer, "yaml", nil, recs)
}

// objectRows are the rows the processes returned for the object ID (or prefix) id: of
// one object, its owner's row first and then its borrowers' (the rows of one object
// are one object, whatever their number), or the error of none or of several objects.
func objectRows(id string, objs []core.ObjectInfo) ([]record, error) {
	seen := map[string]bool{}
	for _, o := range objs {
		seen[o.ObjectID] = true
	}
	switch len(seen) {
	case 0:
		return nil, exitf(ExitError, "no object %q in the cluster (rayctl list objects shows them)", id)
	case 1:
	default:
		return nil, ambiguous("object", id, slices.Collect(maps.Keys(seen)))
	}
	rows := slices.Clone(objs)
	sort.SliceStable(rows, func(i, j int) bool {
		bi, bj := rows[i].RefType == core.RefBorrowed, rows[j].RefType == core.RefBorrowed
		if bi != bj {
			return bj
		}
		return rows[i].Holder < rows[j].Holder
	})
	recs := make([]record, len(rows))
	for i := range rows {
		recs[i] = objectRecord(&rows[i])
	}
	return recs, nil
}

// summarizeObjects counts objects by reference type and state (Ray groups by call site,
// which ray-go does not record), with their bytes.
func summarizeObjects(c *ucli.Context, format string) error {
	res, err := gatherObjects(c, "", core.ObjectQuery{Summary: true, Limit: 1})
	if err != nil {
		return err
	}
	counts := map[string]map[string]int{}
	bytes := map[string]int64{}
	for _, oc := range res.Summary {
		if counts[oc.RefType] == nil {
			counts[oc.RefType] = map[string]int{}
		}
		counts[oc.RefType][oc.State] += oc.Count
		bytes[oc.RefType] += oc.Bytes
	}
	out := countTable("reference_type", counts)
	for i, r := range out {
		g, _ := r.get("reference_type")
		out[i] = append(r, field{"bytes", bytes[g.(string)]})
	}
	return printRecords(c.App.Writer, format, nil, out)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
