package statusqueue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestAFailedWriteIsRetriedAndRunEndsWithTheContext: an item whose write
// fails is reported and comes back; once it succeeds it is not written
// again; Run's workers end when the context does.
func TestAFailedWriteIsRetriedAndRunEndsWithTheContext(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	writes, failures := 0, 0
	write := func(_ context.Context, item string) error {
		mu.Lock()
		defer mu.Unlock()
		writes++
		if writes < 3 {
			return errors.New("conflict")
		}
		return nil
	}
	failed := func(string, error) {
		mu.Lock()
		failures++
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, q, 2, write, failed)
		close(done)
	}()
	q.Add("a")
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		w, f := writes, failures
		mu.Unlock()
		if w == 3 {
			if f != 2 {
				t.Errorf("%d failures reported, want 2", f)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes, want 3", w)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	if writes != 3 {
		t.Errorf("%d writes after success, want 3", writes)
	}
	mu.Unlock()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end with the context")
	}
}
