package main

import (
	"context"
	"strings"

	"github.com/go-logr/logr"

	"github.com/openshift-router-go/router/haproxy/capability"
	"github.com/openshift-router-go/router/router/config"
)

// fitCurves drops from ROUTER_CURVES the names the local HAProxy's OpenSSL
// does not know (one unknown name makes HAProxy refuse the whole list; the
// ingress operator's default names X25519MLKEM768, which OpenSSL 3.0
// lacks), with a warning. If haproxy cannot be asked (no binary, e.g. with
// HAProxy in a sidecar), the list is kept as given.
func fitCurves(ctx context.Context, cfg *config.Config, haproxy string, log logr.Logger) {
	if cfg.HAProxy.Curves == "" {
		return
	}
	if haproxy == "" {
		haproxy = "haproxy"
	}
	want := strings.Split(cfg.HAProxy.Curves, ":")
	ok, refused, err := capability.SupportedCurves(ctx, haproxy, want)
	if err != nil {
		log.Info("could not check ROUTER_CURVES against haproxy; using the list as given", "ROUTER_CURVES", cfg.HAProxy.Curves, "err", err.Error())
		return
	}
	if len(refused) == 0 {
		return
	}
	cfg.HAProxy.Curves = strings.Join(ok, ":")
	using := cfg.HAProxy.Curves
	if using == "" {
		using = "HAProxy's default curves"
	}
	log.Info("configuration warning: ROUTER_CURVES names curves this HAProxy's OpenSSL does not support; they are left out",
		"unsupported", strings.Join(refused, ":"), "using", using)
}
