package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift-router-go/router/test/prereq"
)

// WithControllerManager also runs kube-controller-manager
// (KubeControllerManagerPath), for tests that need the objects its
// controllers make: a Deployment's ReplicaSets and Pods, a Service's
// EndpointSlices from its Pods, a namespace's default ServiceAccount (the
// API server refuses Pods until it exists) and the deletion of a
// namespace's objects. There are no nodes but those a test starts
// (StartNode), so the controllers that act on nodes going silent
// (node-lifecycle-controller, taint-eviction-controller) do not run. Start
// returns once the default namespace's ServiceAccount exists.
func WithControllerManager() Option {
	return func(o *options) { o.controllerManager = true }
}

// KubeControllerManagerPath returns where the kube-controller-manager
// binary is expected: $KUBE_CONTROLLER_MANAGER, else
// $KUBE_CONTROLLER_MANAGER_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test/kube-controller-manager-v1.32.4
// (where hack/kube-controller-manager.sh puts it).
func KubeControllerManagerPath() string {
	return kubeBinaryPath("kube-controller-manager", "KUBE_CONTROLLER_MANAGER", "KUBE_CONTROLLER_MANAGER_CACHE")
}

// kubeBinaryPath is the first of the environment variables envs that is
// set, else where hack/kube-binary.sh caches component.
func kubeBinaryPath(component string, envs ...string) string {
	for _, e := range envs {
		if p := os.Getenv(e); p != "" {
			return p
		}
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "openshift-router-test", component+"-"+KubeVersion)
}

// startControllerManager runs kube-controller-manager against the API
// server as the admin user, and waits for the default ServiceAccount.
func (c *Cluster) startControllerManager() error {
	bin := KubeControllerManagerPath()
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return &prereq.Missing{Component: "kube-controller-manager", Detail: fmt.Sprintf("%s not found at %s; "+
			"KUBE_CONTROLLER_MANAGER names another binary", KubeVersion, bin)}
	}
	p, err := startProcess("kube-controller-manager", filepath.Join(c.Dir, "kube-controller-manager.log"), bin,
		"--kubeconfig="+c.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*,-node-lifecycle-controller,-taint-eviction-controller",
		"--root-ca-file="+c.CAFile,
		"--service-account-private-key-file="+filepath.Join(c.Dir, "sa.key"),
		"--use-service-account-credentials=false",
		// The defaults (20/s, bursts of 30) slow a test's setup and
		// the deletion of its namespaces.
		"--kube-api-qps=100", "--kube-api-burst=200",
	)
	if err != nil {
		return err
	}
	c.controllerManager = p
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := ctxTimeout(5 * time.Second)
		_, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		cancel()
		if err == nil {
			return nil
		}
		if p.exited() || time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager: no default service account after 60s (%v)\n%s", err, p.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
