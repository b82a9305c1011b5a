package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	ray "github.com/ray-go/ray"
)

// ownerJobCheck (ownerjob, TestSubmittedDriverActorsDie) is a driver run by `rayctl job
// submit` that owns a non-detached actor: it creates the named actor -actor (namespace
// "e2e"), calls it once, puts 1 MiB, prints "owner ready" and waits to be stopped or
// killed (the test does either); the actor then dies with it, "owner died".
func ownerJobCheck(ctx context.Context) error {
	h := accelClass.Remote(ctx, ray.Name(actorName), ray.Namespace("e2e"))
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := ray.Get(cctx, accelAdd.Remote(cctx, h, ray.V(1))); err != nil {
		return err
	}
	obj, err := ray.Put(ctx, make([]byte, 1<<20))
	if err != nil {
		return err
	}
	fmt.Println("owner ready")
	time.Sleep(10 * time.Minute)
	runtime.KeepAlive(h) // the actor lives as long as its handle: this driver holds it
	runtime.KeepAlive(obj)
	return nil
}
