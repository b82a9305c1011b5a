// Package dashboard is the web dashboard a head agent serves (Ray's dashboard, on
// --dashboard-port, default 8265): the cluster's nodes with CPU, memory and object store
// bars, the drivers joined to it (alive, unreachable or dead, as rayctl status lists them),
// what waits for resources (rayctl status's Demands),
// its jobs with their state, namespace, their driver's state and logs, its actors (with their
// namespace), its tasks as a filterable table and
// a timeline, the objects its processes own, and charts of the main metrics over the last hour. The head's Prometheus
// GET /metrics is served on the same port.
//
// # Data
//
// Nothing here gathers state of its own: the pages fetch JSON from /api/, which serves
// what the CLI prints, read by the same functions: clusterstate.Read (rayctl status, list
// nodes|jobs), clusterstate.ReadActors (rayctl list actors), taskstate.Gather (rayctl list
// tasks, timeline; the tasks' owners answer through the GCS), taskstate.GatherObjects
// (rayctl list|summary objects; likewise from the objects' owners), agent.ReadLog (rayctl job
// logs) and taskstate.WriteTimeline (the Chrome trace download). The charts come from a
// ring of samples kept in memory (Config.Window, default an hour, every
// Config.SampleEvery, default 5 s): Run reads clusterstate.Read and the head's metrics
// Gatherer (ray_tasks, ray_actors, the head machine's CPU and memory) at each tick; a
// sample that fails is skipped. The ring is lost when the head stops, like Ray's.
//
// # Pages
//
// Plain HTML, CSS and JavaScript embedded with go:embed (static/): one page whose views
// (#overview, #jobs, #actors, #tasks, #objects, #timeline, #metrics) fetch /api/ with fetch() and
// draw the bars, the timeline and the charts as SVG. Nothing is loaded from elsewhere:
// the Content-Security-Policy allows only this origin.
//
// # Security
//
// Every path, /metrics too, needs the cluster's join token (Config.TokenFile, read per
// request, so `rayctl token rotate` applies at once): as Authorization: Bearer TOKEN, or
// once as ?token=TOKEN, which sets an HttpOnly, SameSite=Strict cookie (an HMAC of the
// token's secret under a key made at start, so it is no copy of the token and rotating
// the token signs everyone out) and redirects to the same URL without it. Without it the
// answer is 401 with where to find the token. An insecure cluster (TokenFile "") asks
// for nothing. The dashboard is read-only (GET and HEAD; others get 405), at most
// Config.MaxInFlight (default 4) requests that read the cluster run at once (others wait
// up to 5 s, then get 503), and it shows no job environment, key or token. It speaks
// plain HTTP on the head's --host (127.0.0.1 unless told otherwise): from elsewhere, reach
// it through an SSH tunnel.
package dashboard
