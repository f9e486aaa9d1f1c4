package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseOptions configure leader election: of several replicas, only the
// holder of the Lease runs the controller.
type LeaseOptions struct {
	// Namespace and Name of the Lease.
	Namespace, Name string
	// Identity of this replica (pod name, host name...).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as in client-go
	// (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunElected runs the controller while this replica holds the Lease, until
// ctx is done. A replica that loses the Lease stops its controller and
// returns an error (its process should exit and be restarted, as
// Kubernetes controllers do).
func (c *Controller) RunElected(ctx context.Context, o LeaseOptions) error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 2 * time.Second
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     c.o.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	lost := make(chan struct{})
	var led atomic.Bool
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "ingress-to-route",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				led.Store(true)
				c.log.Info("Leading: running the ingress-to-route controller", "lease", o.Namespace+"/"+o.Name, "identity", o.Identity)
				if err := c.Run(ctx); err != nil {
					c.log.Error(err, "Ingress-to-route controller stopped")
				}
			},
			OnStoppedLeading: func() { close(lost) },
			OnNewLeader: func(id string) {
				if id != o.Identity {
					c.log.Info("Another replica leads", "lease", o.Namespace+"/"+o.Name, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx)
	<-lost
	if ctx.Err() == nil && led.Load() {
		return fmt.Errorf("lost the lease %s/%s", o.Namespace, o.Name)
	}
	return nil
}
