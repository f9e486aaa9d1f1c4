// Command openshift-router is a drop-in reimplementation of OpenShift's
// HAProxy template router: it watches Routes, Services and endpoints (from a
// manifests directory or, later, the Kubernetes API), renders haproxy.config
// from a template and runs HAProxy.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func main() {
	applyOnPanic(os.Getenv(onPanicEnv), klog.NewKlogr().WithName("router"))
	stopProfile, err := startProfile(os.Getenv(profileEnv))
	if err != nil {
		// As OpenShift's router: a profile that cannot be taken does not
		// stop the router.
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	err = newRootCommand().Execute()
	if stopProfile != nil {
		stopProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func newRootCommand() *cobra.Command {
	cmd, _ := newRoot()
	return cmd
}

// newRoot returns the root command and the flags it runs with.
func newRoot() (*cobra.Command, *runFlags) {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "openshift-router",
		Short: "OpenShift HAProxy template router",
		Long: `openshift-router watches Routes, Services, EndpointSlices (or Endpoints) and
Namespaces, admits routes as OpenShift's router does, renders haproxy.config from
a Go template and runs HAProxy. It is configured by OpenShift's router
environment variables (see docs/env.md).

Without a cluster it reads the objects from a directory of YAML manifests
(--manifests), watching it for changes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), *f)
		},
	}
	f.register(cmd)
	addKlogFlags(cmd)
	cmd.AddCommand(newAdmCommand(), newIngressToRouteCommand(), newRenderCommand(), newCheckCommand(), newTemplateCommand(), newVersionCommand())
	return cmd, f
}
