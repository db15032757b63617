package main

import (
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/modules"
)

// moduleOptions let a command inject what flags would otherwise choose.
type moduleOptions struct {
	// Backend, when set, is what the tools service inspects.
	Backend *backend.Set
}

// registerModules registers the five services for `rcamesh serve`.
func registerModules(r *app.Registry) error {
	return registerModulesWith(r, moduleOptions{})
}

func registerModulesWith(r *app.Registry, opt moduleOptions) error {
	return modules.Register(r, modules.Options{Backend: opt.Backend})
}
