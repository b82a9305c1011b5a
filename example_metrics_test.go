package ray_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/ray-go/ray"
)

func ExampleWithMetricsPort() {
	// Serve Prometheus's /metrics on a free port of 127.0.0.1 (also RAY_GO_METRICS_PORT=0).
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithMetricsPort(0))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(2)))
	resp, err := http.Get("http://" + ray.MetricsAddress(ctx) + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, `ray_tasks{Name="example.halve"`) {
			fmt.Println(line)
		}
	}
	// Output: ray_tasks{Name="example.halve",State="FINISHED"} 1
}

func ExampleMetricsAddress() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithMetricsPort(0))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	addr := ray.MetricsAddress(ctx) // 127.0.0.1:<the port taken>
	fmt.Println(strings.HasPrefix(addr, "127.0.0.1:"))
	// Output: true
}

// A program started as `RAY_GO_METRICS_PORT=0 ./program` serves /metrics without
// WithMetricsPort in its code (0: a free port).
func ExampleMetricsPortEnv() {
	os.Setenv(ray.MetricsPortEnv, "0") // what the shell above does
	defer os.Unsetenv(ray.MetricsPortEnv)
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	fmt.Println(strings.HasPrefix(ray.MetricsAddress(ctx), "127.0.0.1:"))
	// Output: true
}
