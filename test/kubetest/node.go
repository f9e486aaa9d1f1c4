package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Node stands in for a node and its kubelet (StartNode): a Node object,
// Ready, and for each Pod — which it binds to itself, there being no
// scheduler — a test host of a NetNS as the Pod's IP, where it runs the
// Pod's program, then marks the Pod Running and Ready. The program is
// cmd/echo-pod (answering as the Gateway API conformance suite's echo
// server, echo-basic: its HTTP server, or with TCP_ECHO_SERVER its TCP
// server) for a container whose image is echo-basic, with the
// container's environment (values, the Pod's fields, Secret and ConfigMap
// keys) and its Secret and ConfigMap volumes written to files (a path
// under a volume's mount path in the environment names the file); a Pod
// whose volumes name a Secret or ConfigMap that does not exist yet waits
// for it, not Ready. Other images (coredns, echo-basic as a gRPC or UDP
// server) run nothing: their Pods are only made Ready, for callers that
// wait for every Pod of a namespace. A program that ends is started
// again. A Pod being deleted is ended and deleted at once (grace period
// 0); its address is reused only once the NetNS has no new one, the
// earliest freed first.
//
// The cluster needs kube-controller-manager (WithControllerManager) for
// Deployments, ReplicaSets, EndpointSlices and service accounts.
type Node struct {
	Name string

	c     *Cluster
	ns    *NetNS
	dir   string
	bin   string
	logf  func(format string, args ...any)
	pods  corelisters.PodLister
	queue workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex
	runs map[string]*podRun // by namespace/name
	free []string           // addresses of ended Pods
	log  map[string]string  // a Pod's output file, by namespace/name
}

// podRun is a Pod the node runs.
type podRun struct {
	uid  types.UID
	ip   string
	dir  string
	proc *process // nil: nothing runs
}

// StartNode registers a node named name whose Pods run in ns, and runs it
// until t's cleanup (before ns's: call it after NewNetNS).
func (c *Cluster) StartNode(t testing.TB, ns *NetNS, name string) *Node {
	t.Helper()
	dir, err := os.MkdirTemp("", tempPrefix("n"))
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Name: name, c: c, ns: ns, dir: dir, logf: t.Logf, runs: map[string]*podRun{}, log: map[string]string{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 2*time.Second))}
	n.bin = buildCommand(t, dir, "echo-pod")
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(c.Kube, 0)
	var worker sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		n.queue.ShutDown()
		worker.Wait()
		factory.Shutdown()
		n.stopAll()
		os.RemoveAll(dir)
		dctx, dcancel := ctxTimeout(10 * time.Second)
		defer dcancel()
		_ = c.Kube.CoreV1().Nodes().Delete(dctx, name, metav1.DeleteOptions{})
	})
	rctx, rcancel := ctxTimeout(60 * time.Second)
	defer rcancel()
	if err := n.register(rctx); err != nil {
		t.Fatalf("registering node %s: %v", name, err)
	}
	inf := factory.Core().V1().Pods()
	n.pods = inf.Lister()
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    n.enqueue,
		UpdateFunc: func(_, obj any) { n.enqueue(obj) },
		DeleteFunc: n.enqueue,
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(rctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("node: pod informer did not sync within 60s")
	}
	// A few workers: a Pod that takes long to end or start does not
	// hold up the others (the queue gives a key to one worker at a time).
	for i := 0; i < 3; i++ {
		worker.Add(1)
		go func() {
			defer worker.Done()
			for n.next(ctx) {
			}
		}()
	}
	return n
}

// register creates the Node object, Ready.
func (n *Node) register(ctx context.Context) error {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ns.HostIP}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		},
	}
	if _, err := n.c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The status again, in case creation dropped it, and no taints;
	// controllers (ttl-controller) may change the Node meanwhile.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := n.c.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Status = node.Status
		if got, err = n.c.Kube.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return err
		}
		// The API server taints a new node not-ready (TaintNodesByCondition);
		// node-lifecycle-controller, which would lift it, does not run.
		if len(got.Spec.Taints) == 0 {
			return nil
		}
		got.Spec.Taints = nil
		_, err = n.c.Kube.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
}

func (n *Node) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		n.queue.Add(key)
	}
}

// next handles one queued Pod; false once the queue is shut down.
func (n *Node) next(ctx context.Context) bool {
	key, quit := n.queue.Get()
	if quit {
		return false
	}
	defer n.queue.Done(key)
	if ctx.Err() != nil {
		return true // stopping: start nothing more
	}
	err := n.sync(ctx, key)
	switch {
	case err == nil:
		n.queue.Forget(key)
	case ctx.Err() != nil:
	default:
		if !errors.Is(err, errWaiting) && !apierrors.IsConflict(err) {
			n.logf("node %s: pod %s: %v", n.Name, key, err)
		}
		n.queue.AddRateLimited(key)
	}
	return true
}

// errWaiting: the Pod waits for something (a Secret) that may come.
var errWaiting = errors.New("waiting")

func (n *Node) sync(ctx context.Context, key string) error {
	namespace, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := n.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		n.end(key, "")
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case pod.DeletionTimestamp != nil:
		if pod.Spec.NodeName != n.Name && pod.Spec.NodeName != "" {
			return nil
		}
		n.end(key, pod.UID)
		err := n.c.Kube.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case pod.Spec.NodeName == "":
		return n.c.Kube.CoreV1().Pods(namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: n.Name},
		}, metav1.CreateOptions{})
	case pod.Spec.NodeName != n.Name:
		return nil
	}
	n.mu.Lock()
	run := n.runs[key]
	n.mu.Unlock()
	if run != nil && run.uid != pod.UID {
		n.end(key, "") // a Pod of the same name replaced the one that ran
		run = nil
	}
	switch {
	case run == nil:
		if run, err = n.start(ctx, key, pod); err != nil {
			return err
		}
	case run.proc != nil && run.proc.exited():
		// Its program ended: started again, on the same address.
		if err := n.launch(ctx, key, pod, run); err != nil {
			return err
		}
	}
	return n.markReady(ctx, pod, run)
}

// start runs pod on a free address.
func (n *Node) start(ctx context.Context, key string, pod *corev1.Pod) (*podRun, error) {
	ip, err := n.address()
	if err != nil {
		return nil, err
	}
	run := &podRun{uid: pod.UID, ip: ip, dir: filepath.Join(n.dir, string(pod.UID))}
	if err := n.launch(ctx, key, pod, run); err != nil {
		os.RemoveAll(run.dir)
		n.release(ip)
		return nil, err
	}
	n.mu.Lock()
	n.runs[key] = run
	n.mu.Unlock()
	return run, nil
}

// launch starts run's program, if pod has one, on run's address (again,
// after it ended: the address stays, as a container's does when it
// restarts).
func (n *Node) launch(ctx context.Context, key string, pod *corev1.Pod, run *podRun) error {
	if err := os.MkdirAll(run.dir, 0o700); err != nil {
		return err
	}
	env, err := n.environment(ctx, pod, run)
	if err != nil || env == nil {
		return err
	}
	logPath := filepath.Join(n.dir, string(pod.UID)+".log")
	proc, err := n.startEcho(run.ip, env, logPath)
	if err != nil {
		return fmt.Errorf("starting echo-pod: %w", err)
	}
	run.proc = proc
	n.mu.Lock()
	n.log[key] = logPath
	n.mu.Unlock()
	// Its program ending is a change to look at.
	go func() {
		<-proc.done
		n.queue.Add(key)
	}()
	return nil
}

// address takes a new test host of the NetNS or, once they are used up,
// the address that an ended Pod freed first: an address is not reused
// while an EndpointSlice or a router may still name it for the Pod that
// had it.
func (n *Node) address() (string, error) {
	ip, err := n.ns.addAddress()
	if err == nil {
		return ip, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.free) == 0 {
		return "", err
	}
	ip = n.free[0]
	n.free = n.free[1:]
	return ip, nil
}

func (n *Node) release(ip string) {
	n.mu.Lock()
	n.free = append(n.free, ip)
	n.mu.Unlock()
}

// environment returns the environment of pod's echo-pod, or nil when its
// first container is not echo-basic's HTTP or TCP server (nothing runs). The
// Secret and ConfigMap volumes are written under run.dir, and a value in
// the environment under a volume's mount path names its file there.
func (n *Node) environment(ctx context.Context, pod *corev1.Pod, run *podRun) ([]string, error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, nil
	}
	ctr := pod.Spec.Containers[0]
	if !strings.Contains(ctr.Image, "echo-basic") {
		return nil, nil
	}
	mounts := map[string]string{} // mount path -> directory under run.dir
	for _, vm := range ctr.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			files, err := n.volumeFiles(ctx, pod.Namespace, v)
			if err != nil {
				return nil, err
			}
			if files == nil {
				continue
			}
			d := filepath.Join(run.dir, "volumes", v.Name)
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, err
			}
			for name, data := range files {
				if err := os.WriteFile(filepath.Join(d, filepath.Base(name)), data, 0o600); err != nil {
					return nil, err
				}
			}
			mounts[strings.TrimSuffix(vm.MountPath, "/")] = d
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range ctr.Env {
		v, err := n.envValue(ctx, pod, run.ip, e)
		if err != nil {
			return nil, err
		}
		for mp, d := range mounts {
			if rest, ok := strings.CutPrefix(v, mp+"/"); ok {
				v = filepath.Join(d, filepath.Base(rest))
			}
		}
		env = append(env, e.Name+"="+v)
	}
	for _, e := range env {
		for _, other := range []string{"GRPC_ECHO_SERVER=", "UDP_ECHO_SERVER="} {
			if strings.HasPrefix(e, other) && e != other {
				return nil, nil
			}
		}
	}
	return env, nil
}

// volumeFiles returns the files of a Secret or ConfigMap volume (nil for
// other volumes), errWaiting while the object does not exist.
func (n *Node) volumeFiles(ctx context.Context, namespace string, v corev1.Volume) (map[string][]byte, error) {
	var data map[string][]byte
	var items []corev1.KeyToPath
	var err error
	switch {
	case v.Secret != nil:
		data, err = n.secretData(ctx, namespace, v.Secret.SecretName, v.Secret.Optional)
		items = v.Secret.Items
	case v.ConfigMap != nil:
		data, err = n.configMapData(ctx, namespace, v.ConfigMap.Name, v.ConfigMap.Optional)
		items = v.ConfigMap.Items
	default:
		return nil, nil
	}
	if err != nil || len(items) == 0 {
		return data, err
	}
	files := map[string][]byte{}
	for _, it := range items {
		files[it.Path] = data[it.Key]
	}
	return files, nil
}

// secretData is the data of Secret namespace/name (see objectMissing).
func (n *Node) secretData(ctx context.Context, namespace, name string, optional *bool) (map[string][]byte, error) {
	s, err := n.c.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return objectMissing("secret", namespace, name, optional, err)
	}
	return s.Data, nil
}

// configMapData is the data and binary data of ConfigMap namespace/name
// (see objectMissing).
func (n *Node) configMapData(ctx context.Context, namespace, name string, optional *bool) (map[string][]byte, error) {
	cm, err := n.c.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return objectMissing("configmap", namespace, name, optional, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return data, nil
}

// objectMissing is what a Pod gets of a Secret or ConfigMap it could not
// read: nothing, when it does not exist and the Pod marks it optional (as
// a kubelet gives it); errWaiting, when it does not exist yet; else err.
func objectMissing(kind, namespace, name string, optional *bool, err error) (map[string][]byte, error) {
	switch {
	case !apierrors.IsNotFound(err):
		return nil, err
	case ptr.Deref(optional, false):
		return map[string][]byte{}, nil
	}
	return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, errWaiting)
}

// envValue resolves one environment variable of pod.
func (n *Node) envValue(ctx context.Context, pod *corev1.Pod, ip string, e corev1.EnvVar) (string, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return e.Value, nil
	case src.FieldRef != nil:
		return n.fieldValue(pod, ip, e.Name, src.FieldRef.FieldPath)
	case src.SecretKeyRef != nil:
		data, err := n.secretData(ctx, pod.Namespace, src.SecretKeyRef.Name, src.SecretKeyRef.Optional)
		return string(data[src.SecretKeyRef.Key]), err
	case src.ConfigMapKeyRef != nil:
		data, err := n.configMapData(ctx, pod.Namespace, src.ConfigMapKeyRef.Name, src.ConfigMapKeyRef.Optional)
		return string(data[src.ConfigMapKeyRef.Key]), err
	}
	return "", fmt.Errorf("env %s: source not supported by the test node", e.Name)
}

// fieldValue is the value of a Pod field an environment variable names.
func (n *Node) fieldValue(pod *corev1.Pod, ip, env, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return n.Name, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return ip, nil
	case "status.hostIP":
		return n.ns.HostIP, nil
	}
	return "", fmt.Errorf("env %s: field %s not supported by the test node", env, path)
}

// startEcho runs echo-pod on ip in the namespace with env, its output
// appended to logPath (unbuffered: a line is there once the request is
// answered), and waits until it listens.
func (n *Node) startEcho(ip string, env []string, logPath string) (*process, error) {
	listeners := 2 // HTTP and H2C
	if envSet(env, "TLS_SERVER_CERT") && envSet(env, "TLS_SERVER_PRIVKEY") {
		listeners++ // HTTPS
	}
	if envSet(env, "TCP_ECHO_SERVER") {
		listeners = 1 // TCP
		if envSet(env, "TLS_SERVER_CERT") && envSet(env, "TLS_SERVER_PRIV_KEY") {
			listeners++ // TLS
		}
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The file may hold an earlier run's output (the Pod's container
	// started again): only what this run prints counts.
	from, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, err
	}
	cmd := n.ns.Command(n.bin, "-ip", ip)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	err = StartCmd(cmd)
	f.Close()
	if err != nil {
		return nil, err
	}
	p := &process{name: "echo-pod " + ip, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	// It prints "listening ADDR" for each listener once it is bound.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, _ := os.ReadFile(logPath); int64(len(b)) > from && bytes.Count(b[from:], []byte("listening ")) >= listeners {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited: %v: %s", p.err, fileTail(logPath, 5))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.stop(time.Second)
			return nil, fmt.Errorf("not listening after 15s: %s", fileTail(logPath, 5))
		}
	}
}

// envSet reports whether env sets name to something.
func envSet(env []string, name string) bool {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, name+"="); ok && v != "" {
			return true
		}
	}
	return false
}

// markReady writes pod's status as a kubelet would for a running Pod
// whose containers are ready, unless it says so already.
func (n *Node) markReady(ctx context.Context, pod *corev1.Pod, run *podRun) error {
	if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP == run.ip && podReady(pod) {
		return nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP, p.Status.HostIPs = n.ns.HostIP, []corev1.HostIP{{IP: n.ns.HostIP}}
	p.Status.PodIP, p.Status.PodIPs = run.ip, []corev1.PodIP{{IP: run.ip}}
	p.Status.StartTime = &now
	p.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr.To(true),
			ContainerID: "kubetest://" + string(pod.UID) + "/" + c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := n.c.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// end stops the Pod of key (of that uid, when given) and frees its address.
func (n *Node) end(key string, uid types.UID) {
	n.mu.Lock()
	run := n.runs[key]
	if run == nil || (uid != "" && run.uid != uid) {
		n.mu.Unlock()
		return
	}
	delete(n.runs, key)
	n.mu.Unlock()
	if run.proc != nil {
		_ = run.proc.stop(5 * time.Second)
	}
	os.RemoveAll(run.dir)
	n.release(run.ip)
}

func (n *Node) stopAll() {
	n.mu.Lock()
	keys := make([]string, 0, len(n.runs))
	for k := range n.runs {
		keys = append(keys, k)
	}
	n.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.end(k, "")
		}()
	}
	wg.Wait()
}

// PodLog returns what the Pod namespace/name printed (its echo-pod's
// output: "Echoing back request made to ..." lines), "" if it ran
// nothing.
func (n *Node) PodLog(namespace, name string) string {
	n.mu.Lock()
	p := n.log[namespace+"/"+name]
	n.mu.Unlock()
	if p == "" {
		return ""
	}
	b, _ := os.ReadFile(p)
	return string(b)
}
