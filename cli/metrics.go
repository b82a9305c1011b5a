package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/gcs"
)

func metricsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "metrics",
		Usage: "list where each agent serves its Prometheus metrics (GET /metrics), or print them as Prometheus file_sd targets",
		Description: "Every agent serves Prometheus metrics on --metrics-port of `rayctl start` (default 8080, or a free " +
			"port when that is taken). The head's endpoint also has the cluster-wide gauges ray_tasks and ray_actors, and the counter ray_go_tasks_finished_total (attempts that ended, for rate()). " +
			"--sd prints the live agents as a Prometheus file_sd_configs file (JSON): write it where a file_sd_configs " +
			"entry of prometheus.yml points, and refresh it when agents come and go.",
		Flags: append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag(), outputFlag(),
			&ucli.BoolFlag{Name: "sd", Usage: "print the live agents' endpoints as a Prometheus file_sd_configs file"}}, credentialFlags()...),
		Action: func(c *ucli.Context) error {
			asJSON, err := outputFormat(c)
			if err != nil {
				return err
			}
			store, addr, err := connect(c)
			if err != nil {
				return err
			}
			defer store.Close()
			eps, err := readEndpoints(c, store)
			if err != nil {
				return exitf(ExitError, "read the agents from %s: %v", strings.Join(addr, ","), err)
			}
			switch {
			case c.Bool("sd"):
				return printJSON(c, fileSD(eps))
			case asJSON:
				return printJSON(c, eps)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tHOST\tROLE\tSTATE\tMETRICS")
			for _, e := range eps {
				role := "agent"
				if e.Head {
					role = "head"
				}
				url := e.URL
				if url == "" {
					url = "(none)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.AgentID, e.Host, role, state(e.Alive), url)
			}
			return tw.Flush()
		},
	}
}

// Endpoint is one agent's metrics endpoint (`rayctl metrics -o json`).
type Endpoint struct {
	AgentID string `json:"agent_id"`
	Host    string `json:"host"`
	Head    bool   `json:"head"`
	Alive   bool   `json:"alive"`
	Address string `json:"address,omitempty"` // host:port
	URL     string `json:"url,omitempty"`
}

func readEndpoints(c *ucli.Context, s gcs.Store) ([]Endpoint, error) {
	agents, err := list(c.Context, s, gcs.AgentsPrefix)
	if err != nil {
		return nil, err
	}
	alives, err := list(c.Context, s, gcs.AgentAlivePrefix)
	if err != nil {
		return nil, err
	}
	alive := map[string]bool{}
	for _, kv := range alives {
		id, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
		alive[id] = true
	}
	out := []Endpoint{}
	for _, kv := range agents {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		a, err := agent.DecodeAgentInfo(id, kv.Value)
		if err != nil {
			continue
		}
		e := Endpoint{AgentID: id, Host: a.GetHostname(), Head: a.GetHead(), Alive: alive[id], Address: a.GetMetricsAddress()}
		if e.Address != "" {
			e.URL = "http://" + e.Address + "/metrics"
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Head != out[j].Head {
			return out[i].Head
		}
		return out[i].AgentID < out[j].AgentID
	})
	return out, nil
}

// sdGroup is one target group of a Prometheus file_sd_configs file.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// fileSD returns the live agents that serve metrics as file_sd target groups, one per
// agent, labelled with its ID, host and role.
func fileSD(eps []Endpoint) []sdGroup {
	out := []sdGroup{}
	for _, e := range eps {
		if !e.Alive || e.Address == "" {
			continue
		}
		role := "agent"
		if e.Head {
			role = "head"
		}
		out = append(out, sdGroup{Targets: []string{e.Address}, Labels: map[string]string{"ray_go_agent": e.AgentID,
			"ray_go_host": e.Host, "ray_go_role": role}})
	}
	return out
}
