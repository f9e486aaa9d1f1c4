// Package statusqueue runs a status writer's work queue (router/status for
// routes, router/gatewaystatus for the Gateway API): workers take items
// until the context ends; an item whose write fails is reported and retried
// later, rate-limited; one that succeeds is forgotten by the rate limiter.
package statusqueue

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Run processes q with the given number of workers until ctx is done.
func Run[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], workers int,
	write func(context.Context, T) error, failed func(T, error)) {
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for Next(ctx, q, write, failed) {
			}
		}()
	}
	wg.Wait()
}

// Next processes one item of q; it reports false once q is shut down.
func Next[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T],
	write func(context.Context, T) error, failed func(T, error)) bool {
	it, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(it)
	if err := write(ctx, it); err != nil {
		failed(it, err)
		q.AddRateLimited(it)
		return true
	}
	q.Forget(it)
	return true
}
