package controller

import (
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
)

// RenderOnce admits the routes in o.Store, builds the model and renders
// every file the router would write for it (configuration, maps,
// certificates), without writing anything or running HAProxy. It is the
// same code path Commit takes, so for the same store and options the files
// are byte for byte those a running router writes. Only o.Store, o.Renderer,
// o.Admission, o.Build, o.Hostnames and o.DefaultCertificate are used.
func RenderOnce(o Options) ([]files.File, admission.Decision, error) {
	c := New(o)
	td, decision, _, err := c.buildModel(nil)
	if err != nil {
		return nil, admission.Decision{}, err
	}
	fs, err := c.render(td)
	if err != nil {
		return nil, admission.Decision{}, err
	}
	return fs, decision, nil
}
