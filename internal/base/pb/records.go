package pb

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// DecodeJobWorker decodes the record of jobworkers/<job>/<agent> (read from the GCS by
// the agent that wrote it and by the driver waiting for its job's workers): the record of
// that job's worker on that agent, in a known state, with a non-negative pid. A record that
// names another job or agent than its key is refused, so no record can speak for another
// agent's worker.
func DecodeJobWorker(job, agentID string, b []byte) (*JobWorker, error) {
	w := &JobWorker{}
	if err := proto.Unmarshal(b, w); err != nil {
		return nil, fmt.Errorf("decode the worker of job %s on agent %s: %w", job, agentID, err)
	}
	switch {
	case w.GetJobId() != job || w.GetAgentId() != agentID:
		return nil, fmt.Errorf("the record of the worker of job %s on agent %s names job %q on agent %q", job, agentID, w.GetJobId(), w.GetAgentId())
	case w.GetPid() < 0:
		return nil, fmt.Errorf("the worker of job %s on agent %s has the negative pid %d", job, agentID, w.GetPid())
	}
	if _, ok := JobWorker_State_name[int32(w.GetState())]; !ok {
		return nil, fmt.Errorf("the worker of job %s on agent %s has the unknown state %d", job, agentID, int32(w.GetState()))
	}
	return w, nil
}
