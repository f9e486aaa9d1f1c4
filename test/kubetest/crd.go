package kubetest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const openshiftAPIModule = "github.com/openshift/api"

// routeCRDRelPath is the Route CRD inside the openshift/api module.
const routeCRDRelPath = "route/v1/zz_generated.crd-manifests/routes.crd.yaml"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var routeCRD struct {
	once sync.Once
	path string
	obj  []byte // JSON
	err  error
}

// RouteCRDPath returns the path of the real Route CRD manifest in the module
// cache: routes.crd.yaml of the github.com/openshift/api version this test
// binary was built with (the one go.mod requires).
func RouteCRDPath() (string, error) {
	loadRouteCRD()
	return routeCRD.path, routeCRD.err
}

func loadRouteCRD() {
	routeCRD.once.Do(func() {
		dir, err := moduleDir(openshiftAPIModule, "")
		if err != nil {
			routeCRD.err = err
			return
		}
		routeCRD.path = filepath.Join(dir, routeCRDRelPath)
		y, err := os.ReadFile(routeCRD.path)
		if err != nil {
			routeCRD.err = err
			return
		}
		routeCRD.obj, routeCRD.err = yaml.YAMLToJSON(y)
	})
}

// moduleDir finds a module's directory: the version linked into this
// binary, else version, downloaded (from the module cache when it is
// there) with go mod download; else go list -m in the current module.
func moduleDir(module, version string) (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == module {
				version = d.Version
				if d.Replace != nil {
					if d.Replace.Version == "" { // local directory replacement
						return d.Replace.Path, nil
					}
					version = d.Replace.Version
				}
			}
		}
	}
	var m struct {
		Dir   string
		Error string
	}
	var cmd *exec.Cmd
	if version != "" {
		cmd = exec.Command("go", "mod", "download", "-json", module+"@"+version)
		cmd.Dir = os.TempDir() // outside any module
	} else {
		cmd = exec.Command("go", "list", "-m", "-json", module)
	}
	out, err := cmd.Output()
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		if m.Error != "" {
			return "", fmt.Errorf("%s: %s", strings.Join(cmd.Args, " "), m.Error)
		}
		return "", fmt.Errorf("%s: %v %s", strings.Join(cmd.Args, " "), err, out)
	}
	return m.Dir, nil
}

// applyRouteCRD creates the Route CRD and waits until routes are served.
func (c *Cluster) applyRouteCRD() error {
	loadRouteCRD()
	if routeCRD.err != nil {
		return fmt.Errorf("route CRD: %w", routeCRD.err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(routeCRD.obj); err != nil {
		return fmt.Errorf("route CRD %s: %w", routeCRD.path, err)
	}
	if err := c.createCRD(obj); err != nil {
		return err
	}
	return c.waitRoutesServed(30 * time.Second)
}

// createCRD creates a CRD (unless it exists) and waits until it is
// established.
func (c *Cluster) createCRD(obj *unstructured.Unstructured) error {
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", obj.GetName(), err)
	}
	for {
		got, err := c.Dynamic.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err == nil && crdEstablished(got) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("CRD %s not established after 30s (last error: %v)", obj.GetName(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func crdEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, ci := range conds {
		cm, ok := ci.(map[string]any)
		if ok && cm["type"] == "Established" && cm["status"] == "True" {
			return true
		}
	}
	return false
}

// waitRoutesServed waits until discovery lists route.openshift.io/v1 routes
// and listing routes works.
func (c *Cluster) waitRoutesServed(timeout time.Duration) error {
	ctx, cancel := ctxTimeout(timeout)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		lastErr = func() error {
			rl, err := c.Kube.Discovery().ServerResourcesForGroupVersion("route.openshift.io/v1")
			if err != nil {
				return err
			}
			found := false
			for _, r := range rl.APIResources {
				found = found || r.Name == "routes"
			}
			if !found {
				return fmt.Errorf("route.openshift.io/v1 does not list routes")
			}
			_, err = c.Routes.RouteV1().Routes("default").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}()
		if lastErr == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("routes not served after %v: %v", timeout, lastErr)
}
